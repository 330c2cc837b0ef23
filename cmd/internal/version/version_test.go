package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	const mod = "github.com/kube-applier-aws/kubeapplier"
	for _, tc := range []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"checkout with commit", "(devel)", []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0a30fba58d007a7ae76a246f73d8f9707f45e7bc"},
			{Key: "vcs.time", Value: "2026-12-01T20:00:00Z"}, {Key: "vcs.modified", Value: "false"}},
			"(devel) (" + mod + ", commit 0a30fba58d007a7ae76a246f73d8f9707f45e7bc, 2026-12-01T20:00:00Z, go1.26.8)"},
		{"uncommitted changes", "(devel)", []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}},
			"(devel) (" + mod + ", commit abc-dirty, go1.26.8)"},
		{"go install of a tag", "v1.2.0", nil, "v1.2.0 (" + mod + ", commit unknown, go1.26.8)"},
		{"no version recorded", "", nil, "(devel) (" + mod + ", commit unknown, go1.26.8)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: mod, Version: tc.version}, Settings: tc.settings}
			if got := FromBuildInfo(bi).String(); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// A test binary has build info too (module path and Go version, no commit).
func TestGetInTestBinary(t *testing.T) {
	i := Get()
	if i.Module != "github.com/kube-applier-aws/kubeapplier" || i.GoVersion == "" {
		t.Fatalf("Get() = %+v, want the main module and a Go version", i)
	}
}
