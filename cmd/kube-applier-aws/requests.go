package main

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/kube-applier-aws/kubeapplier/internal/reqcount"
)

// countRequests makes the process's own requests visible on /metrics, so their cost (an idle
// applier's above all) can be measured from outside:
//
//	kube_applier_dynamodb_requests_total{operation}  DynamoDB and DynamoDB Streams calls, each attempt
//	kube_applier_kube_requests_total{verb}           kube-apiserver requests (get, list, watch, apply, ...)
//
// It adds a middleware to awsCfg's APIOptions and a wrapper to restCfg's transport; both must
// be called before the clients are built from them.
func countRequests(reg prometheus.Registerer, awsCfg *aws.Config, restCfg *rest.Config) {
	ddb := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_dynamodb_requests_total",
		Help: "DynamoDB and DynamoDB Streams requests sent, by operation (each attempt, retries included)."}, []string{"operation"})
	kube := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kube_applier_kube_requests_total",
		Help: "kube-apiserver requests sent, by verb (get, list, watch, create, update, patch, apply, delete, deletecollection, discovery)."}, []string{"verb"})
	reg.MustRegister(ddb, kube)
	awsCfg.APIOptions = append(awsCfg.APIOptions, reqcount.AWSMiddleware(func(op string) { ddb.WithLabelValues(op).Inc() }))
	restCfg.Wrap(reqcount.Wrap(func(verb string) { kube.WithLabelValues(verb).Inc() }))
}
