package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	tests := []struct {
		name    string
		stamped string
		info    debug.BuildInfo
		want    Build
	}{
		{
			name:    "ldflags version wins over the module version",
			stamped: "v1.2.3",
			info: debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.9.0"},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "false"}}},
			want: Build{Version: "v1.2.3", Revision: "abc123", GoVersion: "go1.26.0"},
		},
		{
			name: "module version of go install",
			info: debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.9.0"}},
			want: Build{Version: "v0.9.0", Revision: "unknown", GoVersion: "go1.26.0"},
		},
		{
			name: "a dirty checkout says so",
			info: debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"},
				Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}},
			want: Build{Version: "", Revision: "abc123-dirty", GoVersion: "go1.26.0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fromBuildInfo(Build{Version: tt.stamped, Revision: "unknown", GoVersion: "go0"}, &tt.info)
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestGetDefaultsToDev(t *testing.T) {
	// Test binaries carry no module version and no ldflags stamp.
	b := Get()
	if b.Version != "dev" || b.GoVersion == "" {
		t.Fatalf("Get() = %+v, want version dev and a Go version", b)
	}
	if ua := UserAgent(); ua != "a2a-gateway/dev" {
		t.Fatalf("UserAgent() = %q", ua)
	}
	if !strings.HasPrefix(b.String(), "a2a-gateway dev (revision ") {
		t.Fatalf("String() = %q", b.String())
	}
}

func TestStampedRevision(t *testing.T) {
	// Test binaries record no VCS revision, so the stamped one is reported.
	defer func(old string) { revision = old }(revision)
	revision = "0123abc"
	if b := Get(); b.Revision != "0123abc" {
		t.Fatalf("Get().Revision = %q, want the stamped 0123abc", b.Revision)
	}
}
