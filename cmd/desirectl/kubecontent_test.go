package main

import (
	"testing"
)

func TestParseKubeContent(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		ok   bool
		want string // group/version/kind namespace/name
	}{
		{raw: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"}}`, ok: true, want: "/v1, Kind=ConfigMap ns/a"},
		{raw: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"}}`, ok: true, want: "apps/v1, Kind=Deployment /d"},
		{raw: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"a-"}}`},
		{raw: `{"apiVersion":"v1","kind":"List","items":[]}`},
		{raw: `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"name":"x"},"items":[{}]}`},
		{raw: `{"kind":"ConfigMap","metadata":{"name":"a"}}`},
		{raw: `{"apiVersion":"a/b/c","kind":"ConfigMap","metadata":{"name":"a"}}`},
		{raw: `[1]`},
		{raw: `null`},
		{raw: ``},
	} {
		obj, err := parseKubeContent([]byte(tc.raw))
		if (err == nil) != tc.ok {
			t.Fatalf("%s: err %v, want ok %v", tc.raw, err, tc.ok)
		}
		if err == nil {
			if got := obj.GroupVersionKind().String() + " " + obj.GetNamespace() + "/" + obj.GetName(); got != tc.want {
				t.Fatalf("%s: %s, want %s", tc.raw, got, tc.want)
			}
		}
	}
}
