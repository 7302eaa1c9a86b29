package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

func TestBuildInfo(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name    string
		bi      *debug.BuildInfo
		stamped Stamp
		want    Info
		line    string
	}{{
		name: "module version from go install",
		bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.0"}},
		want: Info{Version: "v0.1.0", GoVersion: "go1.26.8"},
		line: "kubecel v0.1.0 go1.26.8",
	}, {
		name: "checkout with local changes",
		bi: &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261122100000-0123456789ab+dirty"},
			Settings: vcs("true")},
		want: Info{Version: "v0.0.0-20261122100000-0123456789ab+dirty", Revision: rev, Dirty: true, GoVersion: "go1.26.8"},
		line: "kubecel v0.0.0-20261122100000-0123456789ab+dirty (revision 0123456789ab, dirty) go1.26.8",
	}, {
		name:    "the stamped version replaces (devel)",
		bi:      &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")},
		stamped: Stamp{Version: "v0.1.0-3-g0123456"},
		want:    Info{Version: "v0.1.0-3-g0123456", Revision: rev, GoVersion: "go1.26.8"},
		line:    "kubecel v0.1.0-3-g0123456 (revision 0123456789ab) go1.26.8",
	}, {
		name:    "a module version wins over the stamped one",
		bi:      &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.2.0"}},
		stamped: Stamp{Version: "0123456-dirty"},
		want:    Info{Version: "v0.2.0", GoVersion: "go1.26.8"},
		line:    "kubecel v0.2.0 go1.26.8",
	}, {
		// make release builds with -buildvcs=false and stamps its tag and commit.
		name:    "a release: version and revision stamped, no VCS information",
		bi:      &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
		stamped: Stamp{Version: "v0.3.0", Revision: rev},
		want:    Info{Version: "v0.3.0", Revision: rev, GoVersion: "go1.26.8"},
		line:    "kubecel v0.3.0 (revision 0123456789ab) go1.26.8",
	}, {
		name:    "a release from a tree with local changes",
		bi:      &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
		stamped: Stamp{Version: "v0.3.0", Revision: rev, Modified: true},
		want:    Info{Version: "v0.3.0", Revision: rev, Dirty: true, GoVersion: "go1.26.8"},
		line:    "kubecel v0.3.0 (revision 0123456789ab, dirty) go1.26.8",
	}, {
		name:    "the toolchain's VCS revision wins over the stamped one",
		bi:      &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")},
		stamped: Stamp{Version: "v0.3.0", Revision: "fedcba9876543210fedcba9876543210fedcba98", Modified: true},
		want:    Info{Version: "v0.3.0", Revision: rev, GoVersion: "go1.26.8"},
		line:    "kubecel v0.3.0 (revision 0123456789ab) go1.26.8",
	}, {
		name: "no build information",
		want: Info{Version: "(devel)", GoVersion: runtime.Version()},
		line: "kubecel (devel) " + runtime.Version(),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := From(tt.bi, tt.stamped)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("build info (-want +got):\n%s", diff)
			}
			if got.String() != tt.line {
				t.Errorf("line %q, want %q", got.String(), tt.line)
			}
		})
	}
}

// TestBuildInfoMetric: kubecel_build_info is 1, labelled with the build it is given.
func TestBuildInfoMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := Info{Version: "v0.3.0", Revision: "0123456789abcdef0123456789abcdef01234567", GoVersion: "go1.26.8"}
	if err := Register(reg, b); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"goversion": b.GoVersion, "revision": b.Revision, "version": b.Version}
	if len(families) != 1 || families[0].GetName() != "kubecel_build_info" || len(families[0].GetMetric()) != 1 {
		t.Fatalf("gathered %v, want one kubecel_build_info sample", families)
	}
	m := families[0].GetMetric()[0]
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if v := m.GetGauge().GetValue(); v != 1 {
		t.Errorf("value %v, want 1", v)
	}
}
