package kubeapplier

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestIntegrationForwardSafety (issue #40 item 9): a spec attribute this applier does not know
// may be an option of a newer applier, so the desire is refused (PreCheckFailed naming it)
// and never acted on with a default. On the real stack, with items written raw as a newer
// backend writes them: an ApplyDesire with `suspend: true` does not create its object, nor one
// with an applyPolicy value this applier does not know; DeleteDesires with `gracePeriodSeconds`
// or a newer targetItem field do not delete their target; a ReadDesire with `projection`
// mirrors nothing. The ApplyDesire written again
// without the attribute is applied (the refusal was the attribute's).
func TestIntegrationForwardSafety(t *testing.T) {
	e := startE2E(t, nil)
	ctx := context.Background()
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	// put writes d's item with the extra spec attributes (names "targetItem.x" go inside
	// targetItem) into table, as a backend does with PutItem.
	put := func(table string, d Desire, extra map[string]ddbtypes.AttributeValue) {
		t.Helper()
		d.Meta().UpdateTime = time.Now().UTC()
		item, err := api.EncodeItem(d)
		if err != nil {
			t.Fatal(err)
		}
		spec := item[api.AttrSpec].(*ddbtypes.AttributeValueMemberM).Value
		for name, v := range extra {
			if sub, ok := strings.CutPrefix(name, "targetItem."); ok {
				spec["targetItem"].(*ddbtypes.AttributeValueMemberM).Value[sub] = v
			} else {
				spec[name] = v
			}
		}
		if _, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatalf("put %s: %v", d.Meta().DocumentID, err)
		}
	}
	refused := func(st Desire, names ...string) {
		t.Helper()
		msg := condition(st, ConditionSuccessful).Message
		for _, name := range names {
			if !strings.Contains(msg, `"`+name+`"`) || !strings.Contains(msg, "not known to this applier") {
				t.Errorf("%s: message %q does not name %q as unknown", st.Meta().DocumentID, msg, name)
			}
		}
		if c := condition(st, ConditionDegraded); c.Status != ConditionFalse {
			t.Errorf("%s: Degraded = %+v, want False", st.Meta().DocumentID, c)
		}
	}

	// ApplyDesire, suspend: today's default would create the object.
	ro := applyDesire("fwd-readonly", e.configMap("fwd-readonly", map[string]string{"a": "1"}))
	ro.Version = 1
	put(e.applyS.Name(), ro, map[string]ddbtypes.AttributeValue{"suspend": &ddbtypes.AttributeValueMemberBOOL{Value: true}})
	refused(waitCondition(e, e.specs.ApplyDesireStatus(), "fwd-readonly", 1, ConditionFalse, ReasonPreCheckFailed, 30*time.Second), "suspend")
	// A known option with a value this applier does not know: refused the same way.
	newer := applyDesire("fwd-newer-policy", e.configMap("fwd-newer-policy", map[string]string{"a": "1"}))
	newer.Version = 1
	put(e.applyS.Name(), newer, map[string]ddbtypes.AttributeValue{"applyPolicy": s("ReadOnlyOnce")})
	if msg := condition(waitCondition(e, e.specs.ApplyDesireStatus(), "fwd-newer-policy", 1, ConditionFalse, ReasonPreCheckFailed, 30*time.Second),
		ConditionSuccessful).Message; !strings.Contains(msg, `spec.applyPolicy is "ReadOnlyOnce", a value this applier does not know`) {
		t.Errorf("fwd-newer-policy: message %q does not name the value", msg)
	}

	// DeleteDesires of two ConfigMaps that exist: neither is deleted.
	e.createConfigMap("fwd-keep-1", map[string]string{"k": "1"})
	e.createConfigMap("fwd-keep-2", map[string]string{"k": "2"})
	orphan := deleteDesire("fwd-orphan", TargetItem{Version: "v1", Resource: "configmaps", Namespace: e.ns, Name: "fwd-keep-1"})
	put(e.deleteS.Name(), orphan, map[string]ddbtypes.AttributeValue{"gracePeriodSeconds": &ddbtypes.AttributeValueMemberN{Value: "0"}})
	uid := deleteDesire("fwd-uid", TargetItem{Version: "v1", Resource: "configmaps", Namespace: e.ns, Name: "fwd-keep-2"})
	put(e.deleteS.Name(), uid, map[string]ddbtypes.AttributeValue{"targetItem.uid": s("00000000-0000-4000-8000-000000000000")})
	refused(waitCondition(e, e.specs.DeleteDesireStatus(), "fwd-orphan", 1, ConditionFalse, ReasonPreCheckFailed, 30*time.Second), "gracePeriodSeconds")
	refused(waitCondition(e, e.specs.DeleteDesireStatus(), "fwd-uid", 1, ConditionFalse, ReasonPreCheckFailed, 30*time.Second), "targetItem.uid")

	// ReadDesire, projection: nothing is mirrored (not the whole object in its place).
	rd := readDesire("fwd-fields", TargetItem{Version: "v1", Resource: "configmaps", Namespace: e.ns, Name: "fwd-keep-1"})
	put(e.readS.Name(), rd, map[string]ddbtypes.AttributeValue{"projection": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{s("/data")}}})
	rst := waitCondition(e, e.specs.ReadDesireStatus(), "fwd-fields", 1, ConditionFalse, ReasonPreCheckFailed, 30*time.Second)
	refused(rst, "projection")
	if rst.Status.KubeContent != nil {
		t.Errorf("the refused ReadDesire mirrored the object: %s", rst.Status.KubeContent)
	}

	// The cluster is as it was: nothing created, nothing deleted.
	for _, name := range []string{"fwd-readonly", "fwd-newer-policy"} {
		if _, err := e.getConfigMap(name); !apierrors.IsNotFound(err) {
			t.Errorf("the refused ApplyDesire's object %s: got %v, want NotFound (it was applied)", name, err)
		}
	}
	for _, name := range []string{"fwd-keep-1", "fwd-keep-2"} {
		cm, err := e.getConfigMap(name)
		switch {
		case err != nil:
			t.Errorf("ConfigMap %s after a refused DeleteDesire: %v, want it kept", name, err)
		case cm.GetDeletionTimestamp() != nil:
			t.Errorf("ConfigMap %s after a refused DeleteDesire is being deleted (%v)", name, cm.GetDeletionTimestamp())
		}
	}

	// Written again without the attribute (a backend that waits for a newer applier would
	// not): the same desire is applied.
	ro.Version = 2
	put(e.applyS.Name(), ro, nil)
	waitCondition(e, e.specs.ApplyDesireStatus(), "fwd-readonly", 2, ConditionTrue, ReasonNoErrors, 30*time.Second)
	if _, err := e.getConfigMap("fwd-readonly"); err != nil {
		t.Errorf("the ApplyDesire without suspend was not applied: %v", err)
	}
}
