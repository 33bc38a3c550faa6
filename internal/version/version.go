// Package version holds the gateway's version and what the Go toolchain
// recorded about the build. Release builds set the version with
//
//	-ldflags "-X github.com/a2a-gateway/a2a-gateway/internal/version.version=v1.2.3
//	          -X github.com/a2a-gateway/a2a-gateway/internal/version.revision=<commit>"
package version

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// version is the release version; a build without the ldflags override
// reports the main module's version from the build info (a "go install
// module@version" build), else "dev".
var version = ""

// revision is the commit, for builds whose build info records none: an
// image build has no .git in its context, so the Dockerfile passes it in.
var revision = ""

// Build is what one binary knows about how it was built.
type Build struct {
	// Version is the release version, or "dev".
	Version string
	// Revision is the VCS revision the binary was built from, with
	// "-dirty" when the work tree had changes; "unknown" when the build
	// recorded none (go test, or a build outside a checkout).
	Revision string
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// Get reads the build once per call; callers keep the result.
func Get() Build {
	b := Build{Version: version, Revision: "unknown", GoVersion: runtime.Version()}
	if revision != "" {
		b.Revision = revision
	}
	info, ok := debug.ReadBuildInfo()
	if ok {
		b = fromBuildInfo(b, info)
	}
	if b.Version == "" {
		b.Version = "dev"
	}
	return b
}

func fromBuildInfo(b Build, info *debug.BuildInfo) Build {
	if b.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version
	}
	if info.GoVersion != "" {
		b.GoVersion = info.GoVersion
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		if dirty {
			rev += "-dirty"
		}
		b.Revision = rev
	}
	return b
}

// Version is the release version, or "dev".
func Version() string { return Get().Version }

// UserAgent is the product token outbound requests carry. It is read once:
// every forwarded request names it, and reading the build info takes
// microseconds.
var UserAgent = sync.OnceValue(func() string { return "a2a-gateway/" + Version() })

// String is the one line the version command prints.
func (b Build) String() string {
	return "a2a-gateway " + b.Version + " (revision " + b.Revision + ", " + b.GoVersion + ")"
}
