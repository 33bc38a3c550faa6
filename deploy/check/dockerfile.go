package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// staticBases are the images a final stage may start from: no shell, no
// package manager, no C library, so the static binary is all there is.
var staticBases = []string{"scratch", "gcr.io/distroless/static"}

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
	stages, _, err := instructions.Parse(ast.AST, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if len(stages) < 2 {
		return fmt.Errorf("%s: %d stage(s); want a build stage and a runtime stage", name, len(stages))
	}
	var errs []error
	builds := 0
	for _, st := range stages {
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
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
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
	for _, line := range builds {
		for seg := range strings.SplitSeq(line, "&&") {
			if !strings.Contains(seg, "go build") {
				continue
			}
			for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-s -w"} {
				if !strings.Contains(seg, want) {
					errs = append(errs, fmt.Errorf("stage %q: %q lacks %s", st.Name, strings.TrimSpace(seg), want))
				}
			}
		}
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
