# kubecel Makefile. `make help` lists the targets.

SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
CP_DIR := cmd/controlplane
K8S_VERSION := v1.36.3
ETCD_VERSION := v3.6.6
KWOK_VERSION := v0.8.0
STATICCHECK_VERSION := v0.8.2
GOTEST_FLAGS ?=
# The version kubecel reports when the Go toolchain records none (a build without VCS
# information says "(devel)"): kubecel version, --version and kubecel_build_info.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)

K8S_VERSION_PKGS := k8s.io/component-base/version k8s.io/client-go/pkg/version
K8S_MINOR := $(word 2,$(subst ., ,$(K8S_VERSION)))
K8S_LDFLAGS := -s -w $(foreach p,$(K8S_VERSION_PKGS),\
	-X $(p).gitVersion=$(K8S_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=$(K8S_MINOR) \
	-X $(p).gitTreeState=clean -X $(p).buildDate=1970-01-01T00:00:00Z)

CONTROLPLANE := $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/kube-scheduler $(BIN)/etcd $(BIN)/kwok

# helm, kubectl and crane, built from the versions pinned in cmd/tools/go.mod (a module of
# its own: Helm's k8s.io modules are newer than kubecel's). The chart's tests render with
# bin/helm; the docs' tests run bin/helm, bin/kubectl and bin/crane.
TOOLS_DIR := cmd/tools
HELM_VERSION := v3.22.0
TOOLS_K8S_MINOR := 37
TOOLS := $(BIN)/helm $(BIN)/kubectl $(BIN)/crane
HELM_LDFLAGS := -s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	$(foreach p,helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules,-X $(p).k8sVersionMajor=1 -X $(p).k8sVersionMinor=$(TOOLS_K8S_MINOR))
KUBECTL_LDFLAGS := -s -w $(foreach p,$(K8S_VERSION_PKGS),\
	-X $(p).gitVersion=v1.$(TOOLS_K8S_MINOR).0 -X $(p).gitMajor=1 -X $(p).gitMinor=$(TOOLS_K8S_MINOR) \
	-X $(p).gitTreeState=clean -X $(p).buildDate=1970-01-01T00:00:00Z)

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: build
build: ## build bin/kubecel, stamped with VERSION (default: git describe --tags --always --dirty)
	$(GO) build -ldflags '-X main.version=$(VERSION)' -o $(BIN)/kubecel ./cmd/kubecel

DEV_FLAGS ?=

.PHONY: run
run: build controlplane ## start kubecel dev: a local control plane with the examples and the controller (Ctrl-C stops); DEV_FLAGS='--crds DIR --rules FILE -f FILE' adds your own
	$(BIN)/kubecel dev --dir $(BIN)/dev $(DEV_FLAGS)

.PHONY: test
test: controlplane tools ## run every test (unit, integration on the local control plane, short fuzz), race detector on
	$(GO) test -race -count=1 -timeout 25m $(GOTEST_FLAGS) ./...
	cd deploy/monitoring/check && $(GO) test -count=1 ./...

.PHONY: lint
lint: ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd deploy/monitoring/check && $(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

.PHONY: docs
docs: ## regenerate docs/cli, the command reference, from the commands (a test fails when it is stale)
	$(GO) test ./cmd/kubecel -run '^TestCLIReference$$' -count=1 -update

.PHONY: schemas
schemas: controlplane ## regenerate rules/builtin.json.gz, the built-in kinds' schemas, from the local control plane
	$(GO) generate ./rules

.PHONY: rules-schema
rules-schema: ## regenerate rules/rules.schema.json and rules/ruletest.schema.json, the JSON Schemas of rules and test files, from the Go types in rules/internal/format (a test fails when it is stale)
	$(GO) test ./rules/internal/format -run '^TestSchemaIsCurrent$$' -count=1 -update

.PHONY: monitoring-check
monitoring-check: ## parse every expression of deploy/monitoring (Prometheus's parser, in a module of its own) and rewrite deploy/monitoring/metrics.txt, the metrics they read
	cd deploy/monitoring/check && $(GO) test -count=1 ./... -update

.PHONY: controlplane
controlplane: $(CONTROLPLANE) ## build etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok into bin/ (cached)

# The control plane is rebuilt only when its pinned module versions change. A cold build
# takes several minutes on two cores; later builds reuse bin/ and the Go build cache.
$(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/kube-scheduler: $(CP_DIR)/go.mod $(CP_DIR)/go.sum
	@echo ">> building $(notdir $@) $(K8S_VERSION) from k8s.io/kubernetes (first build: ~12 min on 2 cores for the three, most of it for the first; cached in bin/ afterwards)"
	@start=$$(date +%s); cd $(CP_DIR) && $(GO) build -trimpath -ldflags '$(K8S_LDFLAGS)' -o $@ ./$(notdir $@) && \
		echo ">> built $@ in $$(( $$(date +%s) - start )) s"

$(BIN)/etcd: $(CP_DIR)/etcd/go.mod $(CP_DIR)/etcd/go.sum
	@echo ">> building etcd $(ETCD_VERSION) from go.etcd.io/etcd/server/v3 (first build: ~1 min; cached in bin/ afterwards)"
	@start=$$(date +%s); cd $(CP_DIR)/etcd && $(GO) build -trimpath -ldflags '-s -w' -o $@ . && \
		echo ">> built $@ in $$(( $$(date +%s) - start )) s"

# kwok simulates the nodes of the full local control plane (kubecel dev): its own module,
# whose dependencies (k8s.io v0.36.1, kustomize) stay apart from the others'.
$(BIN)/kwok: $(CP_DIR)/kwok/go.mod $(CP_DIR)/kwok/go.sum
	@echo ">> building kwok $(KWOK_VERSION) from sigs.k8s.io/kwok (first build: ~3 min on 2 cores; cached in bin/ afterwards)"
	@start=$$(date +%s); cd $(CP_DIR)/kwok && $(GO) build -trimpath -ldflags '-s -w' -o $@ sigs.k8s.io/kwok/cmd/kwok && \
		echo ">> built $@ in $$(( $$(date +%s) - start )) s"

# make release: VERSION must be a semantic version tag (vX.Y.Z or vX.Y.Z-PRE); the commit,
# its time (every archive is dated at it) and whether the tree has local changes come
# from git. See docs/install.md.
DIST ?= dist
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
MODIFIED ?= $(shell test -z "$$(git status --porcelain 2>/dev/null)" && echo false || echo true)

.PHONY: release
release: $(BIN)/helm ## build dist/ for VERSION=vX.Y.Z with no Docker: binaries for PLATFORMS (default all four), linux images, the Helm chart, install.yaml, SHA256SUMS; then check them
	$(GO) run ./cmd/release -version '$(VERSION)' -revision '$(REVISION)' -modified=$(MODIFIED) \
		-source-date-epoch '$(SOURCE_DATE_EPOCH)' -platforms '$(PLATFORMS)' -dist '$(DIST)' -helm $(BIN)/helm

.PHONY: tools
tools: $(TOOLS) ## build helm, kubectl and crane into bin/ from the versions pinned in cmd/tools/go.mod (cached)

$(BIN)/helm: $(TOOLS_DIR)/go.mod $(TOOLS_DIR)/go.sum
	@echo ">> building helm $(HELM_VERSION) from helm.sh/helm/v3 (first build: a few minutes; cached in bin/ afterwards)"
	@cd $(TOOLS_DIR) && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(HELM_LDFLAGS)' -o $@ helm.sh/helm/v3/cmd/helm

$(BIN)/kubectl: $(TOOLS_DIR)/go.mod $(TOOLS_DIR)/go.sum $(TOOLS_DIR)/kubectl/main.go
	@echo ">> building kubectl v1.$(TOOLS_K8S_MINOR) from k8s.io/kubectl"
	@cd $(TOOLS_DIR) && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(KUBECTL_LDFLAGS)' -o $@ ./kubectl

$(BIN)/crane: $(TOOLS_DIR)/go.mod $(TOOLS_DIR)/go.sum
	@echo ">> building crane from github.com/google/go-containerregistry"
	@cd $(TOOLS_DIR) && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $@ github.com/google/go-containerregistry/cmd/crane

N ?= 1000
BENCH_FLAGS ?=

.PHONY: bench
bench: controlplane build ## measure convergence, writes, memory against the API server's limits (N=1000 parents; N=10000 works; BENCH_FLAGS='--replicas 4 --workers 1': sharded; BENCH_FLAGS='--crds 1000': 1,000 rules on 1,000 CRDs alone)
	$(GO) run ./cmd/bench --n $(N) --kubecel $(BIN)/kubecel --dir $(BIN)/bench $(BENCH_FLAGS)

FUZZTIME ?= 60s

.PHONY: fuzz
fuzz: ## run the fuzz tests for longer (FUZZTIME=60s each)
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME) ./rules/internal/interp
	$(GO) test -run='^$$' -fuzz='^FuzzLoad$$' -fuzztime=$(FUZZTIME) ./rules

# The long form runs without the race detector: `make test` runs the same scenarios, short,
# with it (and kubecel built with it); the long form is about durations and sizes, and its
# memory figures are those of the binary users run. .ci/run calls it after `make test`.
.PHONY: test-faults
test-faults: controlplane ## the fault-injection suite, long form (30 s outages, 14 crash points, 200 property steps for a new seed and 80 for each known one, 10,000-widget load); CI runs it after test
	$(GO) test -count=1 -timeout 60m ./internal/faults -faults.long
