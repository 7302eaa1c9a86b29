# kubecel Makefile. `make help` lists the targets.

SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
CP_DIR := cmd/controlplane
K8S_VERSION := v1.36.3
ETCD_VERSION := v3.6.6
STATICCHECK_VERSION := 2025.1.1
GOTEST_FLAGS ?=

K8S_VERSION_PKGS := k8s.io/component-base/version k8s.io/client-go/pkg/version
K8S_MINOR := $(word 2,$(subst ., ,$(K8S_VERSION)))
K8S_LDFLAGS := -s -w $(foreach p,$(K8S_VERSION_PKGS),\
	-X $(p).gitVersion=$(K8S_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=$(K8S_MINOR) \
	-X $(p).gitTreeState=clean -X $(p).buildDate=1970-01-01T00:00:00Z)

CONTROLPLANE := $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/etcd

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: build
build: ## build bin/kubecel
	$(GO) build -o $(BIN)/kubecel ./cmd/kubecel

.PHONY: controlplane
controlplane: $(CONTROLPLANE) ## build etcd, kube-apiserver, kube-controller-manager into bin/ (cached)

# The control plane is rebuilt only when its pinned module versions change. A cold build
# takes several minutes on two cores; later builds reuse bin/ and the Go build cache.
$(BIN)/kube-apiserver $(BIN)/kube-controller-manager: $(CP_DIR)/go.mod $(CP_DIR)/go.sum
	@echo ">> building $(notdir $@) $(K8S_VERSION) from k8s.io/kubernetes (first build: ~8 min on 2 cores; cached in bin/ afterwards)"
	@cd $(CP_DIR) && $(GO) build -trimpath -ldflags '$(K8S_LDFLAGS)' -o $@ ./$(notdir $@)
	@echo ">> built $@"

$(BIN)/etcd: $(CP_DIR)/etcd/go.mod $(CP_DIR)/etcd/go.sum
	@echo ">> building etcd $(ETCD_VERSION) from go.etcd.io/etcd/server/v3 (first build: ~1 min; cached in bin/ afterwards)"
	@cd $(CP_DIR)/etcd && $(GO) build -trimpath -ldflags '-s -w' -o $@ .
	@echo ">> built $@"
