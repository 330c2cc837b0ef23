package kubeapplier

import "github.com/kube-applier-aws/kubeapplier/internal/stream"

// desireFrom returns the desire an informer's object holds (stream.DesireOf).
func desireFrom(obj any) (Desire, bool) { return stream.DesireOf(obj) }

// desireOf is desireFrom for one kind: false when obj holds no T.
func desireOf[T Desire](obj any) (T, bool) { return stream.As[T](obj) }
