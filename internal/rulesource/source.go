package rulesource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubecel/kubecel/rules"
)

// Source is one place rules come from, as named on the command line. Build one with
// File, Static, ConfigMap or ConfigMapSelector.
type Source interface {
	// String names the source in messages.
	String() string
	// start prepares the source (an informer and its cache) and arranges for changed to
	// be called whenever the source may have changed, until ctx ends. Sources without a
	// watch are re-read every poll.
	start(ctx context.Context, poll time.Duration, changed func()) error
	// parts returns the source's current content.
	parts() []part
}

// part is what loads, fails and keeps its last good version on its own: a file, a
// ConfigMap.
type part struct {
	// name is the part in messages: a path, "configmap NAMESPACE/NAME".
	name string
	docs []rules.Document
	// err is why the part could not be read; it names the part.
	err error
	// object is where Events about the part go (a ConfigMap); nil for files.
	object runtime.Object
	// optional parts (the ConfigMaps of a selector) may fail the first load.
	optional bool
}

// TestFileSuffix ends the names of the test files of kubecel test, which may sit beside
// the rules in a rules directory.
const TestFileSuffix = "_test.yaml"

// File is a rules file, or a directory whose *.yaml files (sorted by name; hidden ones
// and the test files of kubecel test, *_test.yaml, left out) each hold rules. It is
// re-read every poll.
func File(path string) Source { return fileSource(path) }

type fileSource string

func (f fileSource) String() string { return string(f) }

func (f fileSource) start(ctx context.Context, poll time.Duration, changed func()) error {
	go func() {
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				changed()
			}
		}
	}()
	return nil
}

func (f fileSource) parts() []part {
	path := string(f)
	info, err := os.Stat(path)
	if err != nil || !info.IsDir() {
		return []part{readFile(path)}
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return []part{{name: path, err: fmt.Errorf("read rules directory %s: %w", path, err)}}
	}
	var out []part
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".yaml") || strings.HasPrefix(name, ".") || strings.HasSuffix(name, TestFileSuffix) {
			continue
		}
		file := filepath.Join(path, name)
		if st, err := os.Stat(file); err == nil && st.IsDir() {
			continue
		}
		p := readFile(file)
		if errors.Is(p.err, fs.ErrNotExist) {
			continue // removed since the directory was listed
		}
		out = append(out, p)
	}
	return out
}

func readFile(path string) part {
	data, err := os.ReadFile(path)
	if err != nil {
		return part{name: path, err: err} // an *fs.PathError, which names the file
	}
	return part{name: path, docs: []rules.Document{{Source: path, Data: data}}}
}

// Static is rules read once, such as the standard input: they never change.
func Static(name string, data []byte) Source {
	return &staticSource{name: name, data: data}
}

type staticSource struct {
	name string
	data []byte
}

func (s *staticSource) String() string                                     { return s.name }
func (s *staticSource) start(context.Context, time.Duration, func()) error { return nil }
func (s *staticSource) parts() []part {
	return []part{{name: s.name, docs: []rules.Document{{Source: s.name, Data: s.data}}}}
}

// Read reads the documents of sources once, without watching them (for commands that
// load rules once, such as check): the first part that cannot be read is the error.
func Read(sources ...Source) ([]rules.Document, error) {
	var docs []rules.Document
	for _, s := range sources {
		if cm, ok := s.(*configMapSource); ok && cm.store == nil {
			return nil, fmt.Errorf("read %s: a ConfigMap source is read by a Loader", s)
		}
		parts := s.parts()
		if f, ok := s.(fileSource); ok && len(parts) == 0 {
			return nil, CheckFile(string(f))
		}
		for _, p := range parts {
			if p.err != nil {
				return nil, p.err
			}
			docs = append(docs, p.docs...)
		}
	}
	return docs, nil
}

// CheckFile fails for a rules directory that holds no *.yaml file, naming the files it
// does hold that look like rules (*.yml, *.json) and would be left out: commands refuse
// such a --rules at start rather than run no rules. Anything else passes (a file is read
// later, and its errors reported then).
func CheckFile(path string) error {
	info, err := os.Stat(path)
	if err != nil || !info.IsDir() {
		return nil
	}
	if parts := fileSource(path).parts(); len(parts) > 0 {
		return nil
	}
	return emptyDirError(path)
}

// emptyDirError says that a rules directory holds no *.yaml file, naming the files it
// does hold that look like rules (*.yml, *.json) and would be left out.
func emptyDirError(dir string) error {
	var near []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yml", ".json", ".YAML":
			near = append(near, e.Name())
		}
	}
	msg := fmt.Sprintf("rules directory %s holds no *.yaml file", dir)
	if len(near) > 0 {
		msg += fmt.Sprintf(" (%s left out: kubecel reads only files named *.yaml; rename them)", strings.Join(near, ", "))
	}
	return errors.New(msg)
}
