package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// staticBases are the images a final stage may start from: no shell, no
// package manager, no C library, so the static binary is all there is.
var staticBases = []string{"scratch", "gcr.io/distroless/static"}

// pinnedImage is an image reference pinned by the digest of its content.
var pinnedImage = regexp.MustCompile(`^[^@\s]+@sha256:[0-9a-f]{64}$`)

// argRef matches $NAME and ${NAME} in a FROM line.
var argRef = regexp.MustCompile(`\$\{(\w+)\}|\$(\w+)`)

// versionLdflag stamps the release version and commit into the gateway
// binary.
const versionLdflag = "-X github.com/a2a-gateway/a2a-gateway/internal/version.version=${VERSION} -X github.com/a2a-gateway/a2a-gateway/internal/version.revision=${REVISION}"

// ociLabels are the image annotations a registry and a scanner read.
var ociLabels = []string{
	"org.opencontainers.image.source", "org.opencontainers.image.version", "org.opencontainers.image.revision",
	"org.opencontainers.image.licenses", "org.opencontainers.image.title", "org.opencontainers.image.description",
}

// wantEntrypoint is how the gateway image starts: the configuration path
// the Helm chart mounts and docs/production.md documents.
var wantEntrypoint = []string{"/usr/local/bin/a2a-gateway", "serve", "--config", "/etc/a2a-gateway/config.yaml"}

func checkDockerfile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return checkDockerfileStages(f.Name(), f)
}

func checkDockerfileStages(name string, r io.Reader) error {
	ast, err := parser.Parse(r)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	stages, metaArgs, err := instructions.Parse(ast.AST, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	args := map[string]string{}
	for _, a := range metaArgs {
		for _, kv := range a.Args {
			args[kv.Key] = kv.ValueString()
		}
	}
	for i := range stages {
		stages[i].BaseName = argRef.ReplaceAllStringFunc(stages[i].BaseName, func(ref string) string {
			m := argRef.FindStringSubmatch(ref)
			return args[m[1]+m[2]]
		})
	}
	if len(stages) < 2 {
		return fmt.Errorf("%s: %d stage(s); want a build stage and a runtime stage", name, len(stages))
	}
	var errs []error
	builds := 0
	for _, st := range stages {
		if !isStage(st.BaseName, stages) && st.BaseName != "scratch" && !pinnedImage.MatchString(st.BaseName) {
			errs = append(errs, fmt.Errorf("stage %q: base image %q is not pinned by digest (image:tag@sha256:...)", st.Name, st.BaseName))
		}
		if !isRuntimeStage(st, stages) {
			builds++
			errs = append(errs, checkBuildStage(st))
			continue
		}
		errs = append(errs, checkRuntimeStage(st))
	}
	if builds == 0 {
		errs = append(errs, errors.New("no build stage compiles the binaries"))
	}
	final := stages[len(stages)-1]
	if !isRuntimeStage(final, stages) {
		errs = append(errs, fmt.Errorf("the final stage %q is not a static runtime stage", final.Name))
	} else if ep := entrypoint(final); !slices.Equal(ep, wantEntrypoint) {
		errs = append(errs, fmt.Errorf("the final stage's ENTRYPOINT is %q; want the exec form %q", ep, wantEntrypoint))
	}
	errs = append(errs, checkLabels(final, stages))
	for _, c := range final.Commands {
		if hc, ok := c.(*instructions.HealthCheckCommand); ok && (len(hc.Health.Test) == 0 || hc.Health.Test[0] != "CMD") {
			errs = append(errs, fmt.Errorf("the final stage's HEALTHCHECK %q needs a shell the base image does not have; use the exec form CMD [...]", hc.Health.Test))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// isStage reports whether base names an earlier stage.
func isStage(base string, all []instructions.Stage) bool {
	return slices.ContainsFunc(all, func(st instructions.Stage) bool { return st.Name != "" && strings.EqualFold(st.Name, base) })
}

// checkLabels wants the OCI labels on the final image, set by its stage or
// a stage it builds on, with the version and revision from build arguments.
func checkLabels(final instructions.Stage, all []instructions.Stage) error {
	labels := map[string]string{}
	for st, ok := final, true; ok; {
		for _, c := range st.Commands {
			if l, isLabel := c.(*instructions.LabelCommand); isLabel {
				for _, kv := range l.Labels {
					if _, set := labels[kv.Key]; !set {
						labels[kv.Key] = strings.Trim(kv.Value, `"`)
					}
				}
			}
		}
		i := slices.IndexFunc(all, func(o instructions.Stage) bool { return o.Name != "" && strings.EqualFold(o.Name, st.BaseName) })
		if ok = i >= 0; ok {
			st = all[i]
		}
	}
	var errs []error
	for _, l := range ociLabels {
		if labels[l] == "" {
			errs = append(errs, fmt.Errorf("the final image has no label %s", l))
		}
	}
	for l, arg := range map[string]string{"org.opencontainers.image.version": "VERSION", "org.opencontainers.image.revision": "REVISION"} {
		if v := labels[l]; v != "" && v != "${"+arg+"}" {
			errs = append(errs, fmt.Errorf("label %s is %q; want the build argument ${%s}", l, v, arg))
		}
	}
	return errors.Join(errs...)
}

// isRuntimeStage reports whether a stage is (or builds on) a static base.
func isRuntimeStage(st instructions.Stage, all []instructions.Stage) bool {
	base := st.BaseName
	for _, other := range all {
		if other.Name != "" && strings.EqualFold(other.Name, base) {
			return isRuntimeStage(other, all)
		}
	}
	repo, _, _ := strings.Cut(base, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	for _, b := range staticBases {
		if repo == b || strings.HasPrefix(repo, b+"-") {
			return true
		}
	}
	return false
}

// checkBuildStage wants static, reproducible binaries: CGO off, -trimpath,
// and symbols stripped.
func checkBuildStage(st instructions.Stage) error {
	var builds []string
	for _, c := range st.Commands {
		if run, ok := c.(*instructions.RunCommand); ok {
			line := strings.Join(run.CmdLine, " ")
			if strings.Contains(line, "go build") {
				builds = append(builds, line)
			}
		}
	}
	if len(builds) == 0 {
		return fmt.Errorf("stage %q (FROM %s) runs no go build", st.Name, st.BaseName)
	}
	var errs []error
	// Cross-compiling on the builder's platform: a multi-platform build
	// then needs no emulation.
	if st.Platform != "$BUILDPLATFORM" && st.Platform != "${BUILDPLATFORM}" {
		errs = append(errs, fmt.Errorf("stage %q: FROM without --platform=$BUILDPLATFORM", st.Name))
	}
	stamped := false
	for _, line := range builds {
		for seg := range strings.SplitSeq(line, "&&") {
			if !strings.Contains(seg, "go build") {
				continue
			}
			for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-s -w", "GOOS=${TARGETOS}", "GOARCH=${TARGETARCH}"} {
				if !strings.Contains(seg, want) {
					errs = append(errs, fmt.Errorf("stage %q: %q lacks %s", st.Name, strings.TrimSpace(seg), want))
				}
			}
			if strings.Contains(seg, "./cmd/a2a-gateway") && strings.Contains(seg, versionLdflag) {
				stamped = true
			}
		}
	}
	if !stamped {
		errs = append(errs, fmt.Errorf("stage %q: the gateway's go build does not stamp the version (%s)", st.Name, versionLdflag))
	}
	return errors.Join(errs...)
}

// checkRuntimeStage wants a numeric non-root USER (Kubernetes can verify
// runAsNonRoot only for a numeric user) and an exec-form ENTRYPOINT, since
// the base has no shell.
func checkRuntimeStage(st instructions.Stage) error {
	user := ""
	for _, c := range st.Commands {
		if u, ok := c.(*instructions.UserCommand); ok {
			user = u.User
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	n, err := strconv.Atoi(uid)
	var errs []error
	switch {
	case user == "":
		errs = append(errs, fmt.Errorf("stage %q sets no USER: it would run as root", st.Name))
	case err != nil:
		errs = append(errs, fmt.Errorf("stage %q: USER %q is not numeric, so runAsNonRoot cannot verify it", st.Name, user))
	case n == 0:
		errs = append(errs, fmt.Errorf("stage %q: USER %q is root", st.Name, user))
	}
	for _, c := range st.Commands {
		if ep, ok := c.(*instructions.EntrypointCommand); ok && ep.PrependShell {
			errs = append(errs, fmt.Errorf("stage %q: ENTRYPOINT in shell form needs a shell the base image does not have", st.Name))
		}
	}
	return errors.Join(errs...)
}

func entrypoint(st instructions.Stage) []string {
	var ep []string
	for _, c := range st.Commands {
		if e, ok := c.(*instructions.EntrypointCommand); ok {
			ep = e.CmdLine
		}
	}
	return ep
}
