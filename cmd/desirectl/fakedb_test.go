package main

import (
	"github.com/kube-applier-aws/kubeapplier"
	"github.com/kube-applier-aws/kubeapplier/api"
	"github.com/kube-applier-aws/kubeapplier/internal/dynamofake"
)

// fakeDB is the in-memory DynamoDB and DynamoDB Streams shared with the library's tests.
type fakeDB = dynamofake.DB

var (
	_ kubeapplier.DynamoDBAPI = (*fakeDB)(nil)
	_ kubeapplier.StreamsAPI  = (*fakeDB)(nil)
)

func newFakeDB() *fakeDB { return dynamofake.New() }

// putRaw stores an encoded desire directly, bypassing Table (to fix times and versions).
func putRaw(db *fakeDB, table string, d kubeapplier.Desire) {
	item, err := api.EncodeItem(d)
	if err != nil {
		panic(err)
	}
	db.PutRaw(table, item)
}
