// Package version reports what a binary of the project was built from, for `--version`: the
// module version and the VCS commit that the Go toolchain records in the build info
// (runtime/debug.ReadBuildInfo), so nothing has to be stamped with -ldflags.
package version

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Info is what a binary was built from.
type Info struct {
	// Module is the main module's path, e.g. github.com/kube-applier-aws/kubeapplier.
	Module string
	// Version is the main module's version: a tag (v1.2.3) or pseudo-version when built by
	// `go install module@version`, "(devel)" when built from a checkout.
	Version string
	// Revision is the VCS commit (vcs.revision) when the build recorded it (a build from a
	// checkout with -buildvcs=true or auto), else empty.
	Revision string
	// Time is the commit's time (vcs.time), RFC 3339, or empty.
	Time string
	// Modified reports a build from a working tree with uncommitted changes (vcs.modified).
	Modified bool
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// Get returns the running binary's Info; without build info (which only a binary built
// outside module mode lacks) every field but GoVersion is "unknown".
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Module: "unknown", Version: "unknown"}
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo reads an Info out of bi.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	i := Info{Module: bi.Main.Path, Version: bi.Main.Version, GoVersion: bi.GoVersion}
	if i.Version == "" {
		i.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.time":
			i.Time = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

// String is the one line `--version` prints after the program's name, e.g.
// "v1.2.0 (github.com/kube-applier-aws/kubeapplier, commit 0a30fba…, 2026-12-01T20:00:00Z, go1.26.8)".
// A commit built with uncommitted changes is marked "-dirty"; a build that recorded no commit
// says "commit unknown".
func (i Info) String() string {
	parts := []string{i.Module}
	switch {
	case i.Revision == "":
		parts = append(parts, "commit unknown")
	case i.Modified:
		parts = append(parts, "commit "+i.Revision+"-dirty")
	default:
		parts = append(parts, "commit "+i.Revision)
	}
	if i.Time != "" {
		parts = append(parts, i.Time)
	}
	if i.GoVersion != "" {
		parts = append(parts, i.GoVersion)
	}
	return fmt.Sprintf("%s (%s)", i.Version, strings.Join(parts, ", "))
}

// Template is a cobra version template printing "NAME version INFO" on one line:
// cmd.SetVersionTemplate(version.Template).
const Template = "{{.Name}} version {{.Version}}\n"
