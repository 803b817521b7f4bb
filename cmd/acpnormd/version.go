package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version and commit are set by a release build:
//
//	go build -ldflags "-X main.version=v0.2.0 -X main.commit=$(git rev-parse HEAD)" ./cmd/acpnormd
//
// Left empty, they come from the build info: the module version under
// 'go install ...@vX', and the VCS revision when built from a checkout
// with -buildvcs.
var version, commit string

// buildVersion returns the version, commit and Go version of this binary.
func buildVersion() (ver, rev, goVersion string) {
	ver, rev, goVersion = version, commit, runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if ver == "" && bi.Main.Version != "(devel)" {
			ver = bi.Main.Version
		}
		if rev == "" {
			var modified bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if rev != "" && modified {
				rev += " (modified)"
			}
		}
	}
	if ver == "" {
		ver = "devel"
	}
	if rev == "" {
		rev = "unknown"
	}
	return ver, rev, goVersion
}

func printVersion(w io.Writer) {
	ver, rev, goVersion := buildVersion()
	fmt.Fprintf(w, "acpnormd %s\ncommit %s\n%s %s/%s\n", ver, rev, goVersion, runtime.GOOS, runtime.GOARCH)
}
