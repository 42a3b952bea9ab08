package generate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/gengo/v2"
	"k8s.io/gengo/v2/generator"
	"k8s.io/gengo/v2/namer"

	acargs "k8s.io/code-generator/cmd/applyconfiguration-gen/args"
	acgen "k8s.io/code-generator/cmd/applyconfiguration-gen/generators"
	clientargs "k8s.io/code-generator/cmd/client-gen/args"
	clientgen "k8s.io/code-generator/cmd/client-gen/generators"
	conversionargs "k8s.io/code-generator/cmd/conversion-gen/args"
	conversiongen "k8s.io/code-generator/cmd/conversion-gen/generators"
	deepcopyargs "k8s.io/code-generator/cmd/deepcopy-gen/args"
	deepcopygen "k8s.io/code-generator/cmd/deepcopy-gen/generators"
	defaulterargs "k8s.io/code-generator/cmd/defaulter-gen/args"
	defaultergen "k8s.io/code-generator/cmd/defaulter-gen/generators"
	informerargs "k8s.io/code-generator/cmd/informer-gen/args"
	informergen "k8s.io/code-generator/cmd/informer-gen/generators"
	listerargs "k8s.io/code-generator/cmd/lister-gen/args"
	listergen "k8s.io/code-generator/cmd/lister-gen/generators"
	registerargs "k8s.io/code-generator/cmd/register-gen/args"
	registergen "k8s.io/code-generator/cmd/register-gen/generators"
	openapiargs "k8s.io/kube-openapi/cmd/openapi-gen/args"
	openapigen "k8s.io/kube-openapi/pkg/generators"
)

// Options configures Run.
type Options struct {
	// Patterns are Go package patterns (./apis/...), resolved in the
	// current directory. Packages without API tags are skipped.
	Patterns []string
	// HeaderFile, if set, is a file whose text heads every generated file
	// (a licence, say; "YEAR" is replaced by the current year).
	HeaderFile string
	// Verify generates into a temporary directory and compares instead of
	// writing: Run returns an error wrapping ErrStale when a generated file
	// differs, is missing, or is no longer generated.
	Verify bool
	// Out receives one line per written, removed or stale file; nil is
	// io.Discard.
	Out io.Writer
	// OpenAPIDir, if set, switches Run to OpenAPI definitions only: the
	// packages of Patterns (import paths of other modules' API packages,
	// for example k8s.io/api/core/v1, that already carry
	// +k8s:openapi-model-package) are read-only inputs, and Run writes one
	// OpenAPIDir/zz_generated.openapi.go (package named after the
	// directory) with their GetOpenAPIDefinitions and those of meta/v1,
	// runtime and version. OpenAPIDir must lie inside the module of the
	// current directory. Verify applies as usual.
	OpenAPIDir string
	// CRDDir, if set, also writes a CustomResourceDefinition
	// (apiextensions.k8s.io/v1) for each kind of the API packages into
	// CRDDir, one <group>_<plural>.yaml per kind with all its versions,
	// as controller-gen names them (see CRDs for what they hold). It runs
	// after the code is written, on the module's files; Verify compares
	// them too, and files of the run's groups that Run wrote earlier and
	// no longer generates are removed. Every API group of the run must
	// contain a dot (the API server refuses a CRD of group "test").
	CRDDir string
}

// The files conversion-gen, defaulter-gen and the round-trip test
// generator write into API packages.
const (
	conversionFile = "zz_generated.conversion.go"
	defaultsFile   = "zz_generated.defaults.go"
	roundTripFile  = "zz_generated.roundtrip_test.go"
)

// ErrStale is returned (wrapped) by Run with Options.Verify when the
// generated files on disk are not what the generators produce now.
var ErrStale = errors.New("generated files are stale")

// ErrRefused is returned (wrapped) by Run when an API package lacks what
// the generated code or the server will need; the message names each file
// and the fix.
var ErrRefused = errors.New("API packages need fixing before code generation")

// metaPkgs are the read-only inputs of openapi-gen: the definitions of the
// types every API object refers to.
var metaPkgs = []string{
	"k8s.io/apimachinery/pkg/apis/meta/v1",
	"k8s.io/apimachinery/pkg/runtime",
	"k8s.io/apimachinery/pkg/version",
}

// outputRoot is one generated/ tree and the API packages it serves.
type outputRoot struct {
	modPath, modDir string
	genRel          string // slash-separated, relative to modDir
	pkgs            []*apiPackage
}

func (r *outputRoot) dir(sub string) string {
	return filepath.Join(r.modDir, filepath.FromSlash(r.genRel), sub)
}

func (r *outputRoot) pkg(sub string) string {
	return path.Join(r.modPath, r.genRel, sub)
}

// Run finds the API packages matched by opts.Patterns, refuses (ErrRefused)
// what would break later, runs the generators in-process into a temporary
// directory (go-to-protobuf in a child process, see RunHelperIfInvoked),
// and then either writes the differences into the module
// (removing generated files that are no longer generated) or, with
// opts.Verify, reports them and returns ErrStale. It runs `go list` and
// loads packages in the current directory.
func Run(ctx context.Context, opts Options) error {
	out := opts.Out
	if out == nil {
		out = io.Discard
	}
	if len(opts.Patterns) == 0 {
		return errors.New("no package patterns given: pass the API packages (for example ./apis/...)")
	}
	if opts.HeaderFile != "" {
		abs, err := filepath.Abs(opts.HeaderFile)
		if err != nil {
			return fmt.Errorf("header file: %w", err)
		}
		opts.HeaderFile = abs
	}
	if opts.OpenAPIDir != "" {
		if opts.CRDDir != "" {
			return errors.New("--crd-dir and --openapi-only exclude each other: --openapi-only reads other modules' packages, CRDs are for the module's own kinds")
		}
		opts.Out = out
		return runOpenAPIOnly(ctx, opts)
	}
	listed, err := listPackages(ctx, opts.Patterns)
	if err != nil {
		return err
	}
	var pkgs []*apiPackage
	var refusals []string
	for i := range listed {
		p := &listed[i]
		isAPI, r, err := inspect(p)
		if err != nil {
			return err
		}
		if isAPI {
			pkgs = append(pkgs, p)
			refusals = append(refusals, r...)
		}
	}
	refusals = append(refusals, protobufRefusals(pkgs)...)
	refusals = append(refusals, conversionPeerRefusals(ctx, pkgs)...)
	if opts.CRDDir != "" {
		refusals = append(refusals, crdGroupRefusals(pkgs)...)
	}
	if len(refusals) > 0 {
		return fmt.Errorf("%w:\n  %s", ErrRefused, strings.Join(refusals, "\n  "))
	}
	if len(pkgs) == 0 {
		return fmt.Errorf("no API packages in %s: an API package's doc.go has the tags +k8s:deepcopy-gen=package and +groupName=<group>", strings.Join(opts.Patterns, " "))
	}

	roots := map[string]*outputRoot{}
	var rootKeys []string
	for _, p := range pkgs {
		key := filepath.Join(p.modDir, p.genRel())
		r, ok := roots[key]
		if !ok {
			r = &outputRoot{modPath: p.modPath, modDir: p.modDir, genRel: p.genRel()}
			roots[key] = r
			rootKeys = append(rootKeys, key)
		}
		r.pkgs = append(r.pkgs, p)
	}
	sort.Strings(rootKeys)

	tmp, err := os.MkdirTemp("", "customapi-gen-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	rm := &remapper{tmp: tmp, mods: map[string]string{}, verify: opts.Verify, out: out}

	var owned []string // files in the module this run is responsible for
	for _, key := range rootKeys {
		r := roots[key]
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := generateRoot(r, opts.HeaderFile, rm); err != nil {
			return err
		}
		o, err := ownedFiles(r)
		if err != nil {
			return err
		}
		owned = append(owned, o...)
	}
	// Last: the imports of generated.proto follow the Go imports of the
	// package, generated register code included.
	if err := generateProtobuf(ctx, pkgs, opts.HeaderFile, rm); err != nil {
		return err
	}
	err = reconcile(rm, owned, opts.Verify, out)
	if opts.CRDDir == "" || (err != nil && !errors.Is(err, ErrStale)) {
		return err
	}
	return errors.Join(err, runCRDs(ctx, opts.CRDDir, pkgs, opts.Verify, out))
}

// remapper redirects generator output from a module directory into the
// temporary tree.
type remapper struct {
	tmp  string
	mods map[string]string // module dir -> its directory under tmp

	verify    bool      // Options.Verify
	out       io.Writer // Options.Out
	userStale []string  // with verify: hand-written files that would be written (conversion stubs)
}

func (m *remapper) tmpModDir(modDir string) string {
	d, ok := m.mods[modDir]
	if !ok {
		d = filepath.Join(m.tmp, fmt.Sprintf("m%d", len(m.mods)))
		m.mods[modDir] = d
	}
	return d
}

func (m *remapper) remap(dir string) string {
	for modDir, t := range m.mods {
		if rel, err := filepath.Rel(modDir, dir); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.Join(t, rel)
		}
	}
	return dir // outside every module: left alone (generators never write there)
}

// redirected is a generator.Target whose output directory is remapped.
type redirected struct {
	generator.Target
	dir string
}

func (t redirected) Dir() string { return t.dir }

// execute runs one generator over patterns with its targets redirected.
func (m *remapper) execute(name string, systems namer.NameSystems, defaultSystem string, targets func(*generator.Context) []generator.Target, patterns []string) error {
	wrapped := func(c *generator.Context) []generator.Target {
		ts := targets(c)
		for i, t := range ts {
			ts[i] = redirected{Target: t, dir: m.remap(t.Dir())}
		}
		return ts
	}
	if err := gengo.Execute(systems, defaultSystem, wrapped, gengo.StdBuildTag, patterns); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// parseArgs fills a generator's argument struct from flags, the way its own
// main does, so the generator's flag parsing and defaults apply unchanged.
func parseArgs(name string, add func(*pflag.FlagSet), flags []string) error {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	add(fs)
	if err := fs.Parse(flags); err != nil {
		return fmt.Errorf("%s arguments: %w", name, err)
	}
	return nil
}

// generateRoot runs every generator for one generated/ tree.
func generateRoot(r *outputRoot, header string, rm *remapper) error {
	rm.tmpModDir(r.modDir)
	var all, register, clients, relInputs, conversions, defaulters []string
	for _, p := range r.pkgs {
		all = append(all, p.importPath)
		if len(p.conversionPeers) > 0 {
			conversions = append(conversions, p.importPath)
		}
		if p.defaulter {
			defaulters = append(defaulters, p.importPath)
		}
		if !p.hasAddToScheme {
			register = append(register, p.importPath)
		}
		if p.genclient {
			clients = append(clients, p.importPath)
			relInputs = append(relInputs, p.rel())
		}
	}
	sort.Strings(all)
	sort.Strings(clients)
	sort.Strings(relInputs)
	hdr := []string{"--go-header-file=" + header}

	if len(register) > 0 {
		a := registerargs.New()
		if err := parseArgs("register-gen", a.AddFlags, append(hdr, "--output-file=zz_generated.register.go")); err != nil {
			return err
		}
		if err := a.Validate(); err != nil {
			return fmt.Errorf("register-gen: %w", err)
		}
		if err := rm.execute("register-gen", registergen.NameSystems(), registergen.DefaultNameSystem(),
			func(c *generator.Context) []generator.Target { return registergen.GetTargets(c, a) }, register); err != nil {
			return err
		}
	}

	dc := deepcopyargs.New()
	if err := parseArgs("deepcopy-gen", dc.AddFlags, append(hdr, "--output-file=zz_generated.deepcopy.go")); err != nil {
		return err
	}
	if err := dc.Validate(); err != nil {
		return fmt.Errorf("deepcopy-gen: %w", err)
	}
	if err := rm.execute("deepcopy-gen", deepcopygen.NameSystems(), deepcopygen.DefaultNameSystem(),
		func(c *generator.Context) []generator.Target { return deepcopygen.GetTargets(c, dc) }, all); err != nil {
		return err
	}

	if len(defaulters) > 0 {
		sort.Strings(defaulters)
		da := defaulterargs.New()
		if err := parseArgs("defaulter-gen", da.AddFlags, append(hdr, "--output-file="+defaultsFile)); err != nil {
			return err
		}
		if err := da.Validate(); err != nil {
			return fmt.Errorf("defaulter-gen: %w", err)
		}
		if err := rm.execute("defaulter-gen", defaultergen.NameSystems(), defaultergen.DefaultNameSystem(),
			func(c *generator.Context) []generator.Target { return defaultergen.GetTargets(c, da) }, defaulters); err != nil {
			return err
		}
	}

	if len(conversions) > 0 {
		sort.Strings(conversions)
		ca := conversionargs.New()
		if err := parseArgs("conversion-gen", ca.AddFlags, append(hdr, "--output-file="+conversionFile)); err != nil {
			return err
		}
		if err := ca.Validate(); err != nil {
			return fmt.Errorf("conversion-gen: %w", err)
		}
		convert := func() error {
			return rm.execute("conversion-gen", conversiongen.NameSystems(), conversiongen.DefaultNameSystem(),
				func(c *generator.Context) []generator.Target { return conversiongen.GetTargets(c, ca) }, conversions)
		}
		if err := convert(); err != nil {
			return err
		}
		wrote, err := writeConversionStubs(r.pkgs, rm)
		if err != nil {
			return err
		}
		if wrote {
			// The stubs are the package's conversions now: conversion-gen
			// registers them as such (AddConversionFunc).
			if err := convert(); err != nil {
				return err
			}
		}
		if err := generateRoundTripTests(r, header, rm); err != nil {
			return err
		}
	}

	oa := openapiargs.New()
	flags := append(hdr,
		"--output-dir="+r.dir("openapi"),
		"--output-pkg="+r.pkg("openapi"),
		"--output-file=zz_generated.openapi.go",
		"--output-model-name-file=zz_generated.model_name.go",
		"--report-filename="+filepath.Join(rm.remap(r.dir("openapi")), "api-violations.list"),
	)
	for _, m := range metaPkgs {
		flags = append(flags, "--readonly-pkg="+m)
	}
	if err := parseArgs("openapi-gen", oa.AddFlags, flags); err != nil {
		return err
	}
	if err := oa.Validate(); err != nil {
		return fmt.Errorf("openapi-gen: %w", err)
	}
	boilerplate, err := gengo.GoBoilerplate(header, gengo.StdBuildTag, gengo.StdGeneratedBy)
	if err != nil {
		return fmt.Errorf("header file: %w", err)
	}
	if err := os.MkdirAll(rm.remap(r.dir("openapi")), 0o755); err != nil {
		return err
	}
	openapiInputs := append(append([]string{}, metaPkgs...), all...)
	if err := rm.execute("openapi-gen (model names)", openapigen.NameSystems(), openapigen.DefaultNameSystem(),
		func(c *generator.Context) []generator.Target {
			return openapigen.GetModelNameTargets(c, oa, boilerplate)
		}, openapiInputs); err != nil {
		return err
	}
	if err := rm.execute("openapi-gen", openapigen.NameSystems(), openapigen.DefaultNameSystem(),
		func(c *generator.Context) []generator.Target { return openapigen.GetOpenAPITargets(c, oa, boilerplate) }, openapiInputs); err != nil {
		return err
	}

	if len(clients) == 0 {
		return nil
	}
	ac := acargs.New()
	if err := parseArgs("applyconfiguration-gen", func(fs *pflag.FlagSet) { ac.AddFlags(fs, "") }, append(hdr,
		"--output-dir="+r.dir("applyconfiguration"),
		"--output-pkg="+r.pkg("applyconfiguration"),
	)); err != nil {
		return err
	}
	if err := ac.Validate(); err != nil {
		return fmt.Errorf("applyconfiguration-gen: %w", err)
	}
	if err := rm.execute("applyconfiguration-gen", acgen.NameSystems(), acgen.DefaultNameSystem(),
		func(c *generator.Context) []generator.Target { return acgen.GetTargets(c, ac) }, clients); err != nil {
		return err
	}

	cg := clientargs.New()
	flags = append(hdr,
		"--output-dir="+r.dir("clientset"),
		"--output-pkg="+r.pkg("clientset"),
		"--clientset-name=versioned",
		"--apply-configuration-package="+r.pkg("applyconfiguration"),
		"--input-base="+r.modPath,
	)
	for _, in := range relInputs {
		flags = append(flags, "--input="+in)
	}
	if err := parseArgs("client-gen", func(fs *pflag.FlagSet) { cg.AddFlags(fs, "") }, flags); err != nil {
		return err
	}
	if err := cg.Validate(); err != nil {
		return fmt.Errorf("client-gen: %w", err)
	}
	plural, err := pluralExceptions(cg.PluralExceptions)
	if err != nil {
		return fmt.Errorf("client-gen: %w", err)
	}
	if err := rm.execute("client-gen", clientgen.NameSystems(plural), clientgen.DefaultNameSystem(),
		func(c *generator.Context) []generator.Target { return clientgen.GetTargets(c, cg) }, clients); err != nil {
		return err
	}

	lg := listerargs.New()
	if err := parseArgs("lister-gen", lg.AddFlags, append(hdr,
		"--output-dir="+r.dir("listers"),
		"--output-pkg="+r.pkg("listers"),
	)); err != nil {
		return err
	}
	if err := lg.Validate(); err != nil {
		return fmt.Errorf("lister-gen: %w", err)
	}
	plural, err = pluralExceptions(lg.PluralExceptions)
	if err != nil {
		return fmt.Errorf("lister-gen: %w", err)
	}
	if err := rm.execute("lister-gen", listergen.NameSystems(plural), listergen.DefaultNameSystem(),
		func(c *generator.Context) []generator.Target { return listergen.GetTargets(c, lg) }, clients); err != nil {
		return err
	}

	ig := informerargs.New()
	if err := parseArgs("informer-gen", ig.AddFlags, append(hdr,
		"--output-dir="+r.dir("informers"),
		"--output-pkg="+r.pkg("informers"),
		"--versioned-clientset-package="+r.pkg("clientset/versioned"),
		"--listers-package="+r.pkg("listers"),
	)); err != nil {
		return err
	}
	if err := ig.Validate(); err != nil {
		return fmt.Errorf("informer-gen: %w", err)
	}
	plural, err = pluralExceptions(ig.PluralExceptions)
	if err != nil {
		return fmt.Errorf("informer-gen: %w", err)
	}
	return rm.execute("informer-gen", informergen.NameSystems(plural), informergen.DefaultNameSystem(),
		func(c *generator.Context) []generator.Target { return informergen.GetTargets(c, ig) }, clients)
}

// ownedFiles lists the files of the module this run generates or would
// have generated: zz_generated.{register,deepcopy,model_name}.go of each API
// package, and every file marked generated under the root's generated
// subtrees.
func ownedFiles(r *outputRoot) ([]string, error) {
	var owned []string
	for _, p := range r.pkgs {
		for _, n := range []string{"zz_generated.register.go", "zz_generated.deepcopy.go", "zz_generated.model_name.go", defaultsFile, conversionFile, roundTripFile} {
			f := filepath.Join(p.dir, n)
			if _, err := os.Stat(f); err == nil {
				owned = append(owned, f)
			}
		}
		owned = append(owned, protobufOwned(p)...)
	}
	for _, f := range []string{filepath.Join(r.dir("openapi"), "zz_generated.openapi.go"), filepath.Join(r.dir("openapi"), "api-violations.list")} {
		if _, err := os.Stat(f); err == nil {
			owned = append(owned, f)
		}
	}
	for _, sub := range []string{"applyconfiguration", "clientset", "listers", "informers"} {
		err := filepath.WalkDir(r.dir(sub), func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return fs.SkipDir
			}
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if bytes.Contains(b, []byte("// Code generated by ")) && bytes.Contains(b, []byte("DO NOT EDIT.")) {
				owned = append(owned, p)
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("listing %s: %w", r.dir(sub), err)
		}
	}
	return owned, nil
}

// reconcile compares the temporary tree with the module: in verify mode it
// reports differences and returns ErrStale; otherwise it writes changed
// files and removes owned files no longer generated.
func reconcile(rm *remapper, owned []string, verify bool, out io.Writer) error {
	generated := map[string][]byte{}
	for modDir, t := range rm.mods {
		err := filepath.WalkDir(t, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(t, p)
			if err != nil {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			generated[filepath.Join(modDir, rel)] = b
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading generated files: %w", err)
		}
	}
	var files []string
	for f := range generated {
		files = append(files, f)
	}
	sort.Strings(files)
	stale := 0
	for _, f := range files {
		old, err := os.ReadFile(f)
		if err == nil && bytes.Equal(old, generated[f]) {
			continue
		}
		if !errors.Is(err, fs.ErrNotExist) && err != nil {
			return fmt.Errorf("reading %s: %w", f, err)
		}
		stale++
		if verify {
			if err != nil {
				fmt.Fprintf(out, "missing: %s\n", f)
			} else {
				fmt.Fprintf(out, "stale: %s\n", f)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f, generated[f], 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", f, err)
		}
		fmt.Fprintf(out, "wrote: %s\n", f)
	}
	for _, m := range rm.userStale {
		stale++
		fmt.Fprintln(out, m)
	}
	sort.Strings(owned)
	for _, f := range owned {
		if _, ok := generated[f]; ok {
			continue
		}
		stale++
		if verify {
			fmt.Fprintf(out, "no longer generated: %s\n", f)
			continue
		}
		if err := os.Remove(f); err != nil {
			return fmt.Errorf("removing %s: %w", f, err)
		}
		fmt.Fprintf(out, "removed: %s\n", f)
	}
	if verify && stale > 0 {
		return fmt.Errorf("%w: %d file(s); run customapi-gen without --verify and commit the result", ErrStale, stale)
	}
	return nil
}

// pluralExceptions parses "Type:PluralType" entries, as the generators'
// --plural-exceptions flag does, returning an error instead of panicking.
func pluralExceptions(list []string) (map[string]string, error) {
	m := make(map[string]string, len(list))
	for _, e := range list {
		typ, plural, ok := strings.Cut(e, ":")
		if !ok || strings.Contains(plural, ":") {
			return nil, fmt.Errorf("invalid plural exception %q: want Type:PluralType", e)
		}
		m[typ] = plural
	}
	return m, nil
}
