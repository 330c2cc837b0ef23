package api

import (
	"encoding/json"
	"testing"
)

// TestDeepCopySharesNothing: a copy's conditions and content can change without touching the
// original (informer caches hand out shared desires; reconcilers work on copies), and every
// kind copies as itself through DeepCopyDesire.
func TestDeepCopySharesNothing(t *testing.T) {
	a := &ApplyDesire{DynamoDBMetadata: DynamoDBMetadata{DocumentID: "a", Version: 2}, StatusFields: StatusFields{ApplierTerm: 3}}
	a.Spec.KubeContent = json.RawMessage(`{"kind":"ConfigMap"}`)
	a.Status.Conditions = []Condition{{Type: ConditionSuccessful, Status: ConditionTrue}}
	c := a.DeepCopyDesire().(*ApplyDesire)
	c.Status.Conditions[0].Status = ConditionFalse
	c.Spec.KubeContent[0] = 'X'
	c.ApplierTerm = 4
	if a.Status.Conditions[0].Status != ConditionTrue || a.Spec.KubeContent[0] == 'X' || a.ApplierTerm != 3 {
		t.Fatal("the ApplyDesire copy shares memory with the original")
	}
	if c.DocumentID != "a" || c.Version != 2 {
		t.Fatalf("the copy lost its metadata: %+v", c.DynamoDBMetadata)
	}
	r := &ReadDesire{}
	r.Status.KubeContent = json.RawMessage(`{}`)
	rc := r.DeepCopyDesire().(*ReadDesire)
	rc.Status.KubeContent[0] = 'X'
	if r.Status.KubeContent[0] == 'X' {
		t.Fatal("the ReadDesire copy shares its content")
	}
	d := &DeleteDesire{}
	d.Status.Conditions = []Condition{{Type: ConditionDegraded}}
	dc := d.DeepCopyDesire().(*DeleteDesire)
	dc.Status.Conditions[0].Type = "X"
	if d.Status.Conditions[0].Type != ConditionDegraded {
		t.Fatal("the DeleteDesire copy shares its conditions")
	}
	var none *DeleteDesire
	if none.DeepCopy() != nil {
		t.Fatal("DeepCopy of nil is not nil")
	}
}
