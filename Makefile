# nacflow — developer entry points. `make help` lists them.
#
# Everything this Makefile needs is built here from the Go module proxy and
# cached under bin/: the local control plane (kube-apiserver,
# kube-controller-manager, etcd; no Docker and no envtest download site are
# needed) and controller-gen.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

comma := ,
space := $(subst ,, )
BIN          := $(CURDIR)/bin
LOCAL        := $(CURDIR)/.local
GO           ?= go
# One build configuration for everything built here (tools, bin/, test
# binaries, the image): a package compiled once serves them all, and a cold
# build compiles each only once. Static, as Kubernetes, Velero and the image
# ship their binaries, path-independent (the image is reproducible), and
# without DWARF (nothing here runs a debugger; stack traces keep file and
# line).
export CGO_ENABLED ?= 0
export GOFLAGS := $(strip $(filter-out -trimpath -gcflags=all=-dwarf=false,$(shell $(GO) env GOFLAGS)) -trimpath -gcflags=all=-dwarf=false)
# The compiler's garbage collector, while make builds tools and binaries:
# less collecting for more memory (a cold build on 2 cores is CPU-bound;
# the tests run with Go's default).
BUILD_GOGC ?= 400
# Kubernetes release of the local control plane; hack/tools/go.mod pins the
# same release and its staging modules.
KUBE_VERSION      ?= v1.33.13
KUBE_MINOR        := $(word 2,$(subst ., ,$(KUBE_VERSION)))
CONTROLLER_TOOLS_VERSION ?= v0.18.0
# Velero is built from the version go.mod requires (hack/velero/go.mod pins it).
VELERO_VERSION    := $(shell awk '$$1=="github.com/vmware-tanzu/velero" {print $$2}' go.mod)
AWS_PLUGIN_VERSION := $(shell awk '$$1=="github.com/vmware-tanzu/velero-plugin-for-aws" {print $$2}' hack/velero/go.mod)
GOFAKES3_VERSION  ?= v1.2.0
OADP_NAMESPACE    ?= openshift-adp
# make run WITH_VELERO=false: control plane and controller only.
WITH_VELERO       ?= true
TEST_TIMEOUT      ?= 30m

KUBE_APISERVER  := $(BIN)/kube-apiserver
KUBE_CONTROLLER_MANAGER := $(BIN)/kube-controller-manager
ETCD            := $(BIN)/etcd
CONTROLLER_GEN  := $(BIN)/controller-gen
VELERO          := $(BIN)/velero
AWS_PLUGIN      := $(BIN)/plugins/velero-plugin-for-aws
GOFAKES3        := $(BIN)/gofakes3
NAC             := $(BIN)/nac
KUBECTL_NAC     := $(BIN)/kubectl-nac
LOCALCP         := $(BIN)/localcp
NACFLOW_PLUGIN  := $(BIN)/plugins/velero-plugin-nacflow

# nacflow's own version: git describe of the commit (-dirty with uncommitted
# changes), stamped into nac and kubectl-nac, the image's tag and labels.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
NAC_LDFLAGS := -X github.com/nacflow/nacflow/internal/runtime/version.version=$(VERSION) \
	-X github.com/nacflow/nacflow/internal/runtime/version.revision=$(REVISION)

VERSION_PKG := k8s.io/component-base/version
KUBE_LDFLAGS := -s -w \
	-X $(VERSION_PKG).gitVersion=$(KUBE_VERSION) \
	-X $(VERSION_PKG).gitMajor=1 \
	-X $(VERSION_PKG).gitMinor=$(KUBE_MINOR) \
	-X $(VERSION_PKG).gitTreeState=clean \
	-X k8s.io/client-go/pkg/version.gitVersion=$(KUBE_VERSION)

.PHONY: help
help: ## Show the targets.
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

##@ Tools (built once, cached in bin/)

KUBELET        := $(BIN)/kubelet
KUBE_SCHEDULER := $(BIN)/kube-scheduler
# The node's sandbox ("pause") program, made into an image by localcp: the
# node has no registry to pull registry.k8s.io/pause from.
PAUSE          := $(BIN)/pause
# make run NODE=false: no node. auto (the default): a node where the machine
# can run one (Linux, root, containerd, runc and the CNI plugins installed;
# `make node-runtime`), else one line saying why not. true: fail without one.
NODE           ?= auto
# Built for make run and make test on Linux only: elsewhere there is no node.
NODE_TOOLS     := $(if $(filter false,$(NODE)),,$(if $(filter Linux,$(shell uname -s)),$(KUBELET) $(KUBE_SCHEDULER) $(PAUSE)))

# The Kubernetes binaries built here: the control plane, and kubelet and
# kube-scheduler where the local node runs.
KUBE_NODE_BINS := $(filter $(KUBELET) $(KUBE_SCHEDULER),$(NODE_TOOLS))

# One go build for all of them: the packages they share compile once (two go
# builds side by side would each compile them), and one binary links while
# the others' packages compile (a cold build on 2 cores is mostly these).
$(KUBE_APISERVER) $(KUBE_CONTROLLER_MANAGER) $(ETCD) $(KUBE_NODE_BINS) &:
	@echo ">> building $(subst $(space),$(comma) ,$(strip kube-apiserver kube-controller-manager $(notdir $(KUBE_NODE_BINS)))) $(KUBE_VERSION) and etcd from the Go module proxy (first time: about 10 minutes on 2 cores; cached in bin/)"
	@mkdir -p $(BIN)
	cd hack/tools && $(GO) build -o $(BIN)/ -ldflags "$(KUBE_LDFLAGS)" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager $(addprefix k8s.io/kubernetes/cmd/,$(notdir $(KUBE_NODE_BINS))) ./etcd

ifeq ($(KUBE_NODE_BINS),)
$(KUBELET):
	@echo ">> building kubelet $(KUBE_VERSION) from the Go module proxy (first time: about 2 minutes; cached in bin/)"
	cd hack/tools && $(GO) build -o $@ -ldflags "$(KUBE_LDFLAGS)" k8s.io/kubernetes/cmd/kubelet

$(KUBE_SCHEDULER):
	@echo ">> building kube-scheduler $(KUBE_VERSION) from the Go module proxy (cached in bin/)"
	cd hack/tools && $(GO) build -o $@ -ldflags "$(KUBE_LDFLAGS)" k8s.io/kubernetes/cmd/kube-scheduler
endif

$(CONTROLLER_GEN):
	@echo ">> installing controller-gen $(CONTROLLER_TOOLS_VERSION)"
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)

# hack/velero/main.go is Velero's own command with its controller-runtime
# metrics off :8080, so that stacks run side by side. Velero's AWS plugin is a
# tool of the same module (hack/velero/go.mod): one go build compiles the
# Velero, Kubernetes and AWS SDK packages the two share once.
$(VELERO) $(AWS_PLUGIN) &: hack/velero/main.go hack/velero/go.mod
	@echo ">> building the Velero server $(VELERO_VERSION) and velero-plugin-for-aws $(AWS_PLUGIN_VERSION) from the Go module proxy (first time: about 5 minutes; cached in bin/)"
	@grep -q "github.com/vmware-tanzu/velero $(VELERO_VERSION)" hack/velero/go.mod || { echo "hack/velero/go.mod does not pin velero $(VELERO_VERSION) like go.mod"; exit 1; }
	@mkdir -p $(BIN)/plugins
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
		cd hack/velero && $(GO) build -o $$tmp/ . github.com/vmware-tanzu/velero-plugin-for-aws/velero-plugin-for-aws && \
		mv $$tmp/velero $(VELERO) && mv $$tmp/velero-plugin-for-aws $(AWS_PLUGIN)

$(GOFAKES3):
	@echo ">> installing the S3-compatible object store gofakes3 $(GOFAKES3_VERSION)"
	GOBIN=$(BIN) $(GO) install github.com/johannesboyne/gofakes3/cmd/gofakes3@$(GOFAKES3_VERSION)

CONTROL_PLANE := $(KUBE_APISERVER) $(KUBE_CONTROLLER_MANAGER) $(ETCD)
VELERO_STACK  := $(VELERO) $(AWS_PLUGIN) $(GOFAKES3)

# make run and make test build two things at a time (one's links and module
# downloads overlap the other's compiles), but Velero and nacflow's binaries
# only after Kubernetes: they share its client libraries, which two go builds
# side by side would each compile.
ifdef KUBE_FIRST
$(VELERO) $(AWS_PLUGIN) build: | $(KUBE_APISERVER)
endif

.PHONY: kube-tools
kube-tools: ## Build the Kubernetes binaries alone (the control plane, and the node's where it runs): the longest part of a cold build, which .ci/run starts while it checks the generated files.
	@GOGC=$(BUILD_GOGC) $(MAKE) --no-print-directory $(CONTROL_PLANE) $(KUBE_NODE_BINS)

.PHONY: tools
tools: $(CONTROL_PLANE) $(VELERO_STACK) $(CONTROLLER_GEN) ## Build every tool that is missing: control plane (kube-apiserver, kube-controller-manager, etcd), Velero stack, controller-gen.

##@ Local node (Linux, root): kubelet, kube-scheduler and containerd run the Pods of `make deploy-local` (docs/local-node.md)

$(PAUSE): hack/localcp/pause/main.go
	CGO_ENABLED=0 GOOS=linux $(GO) build -trimpath -ldflags "-s -w" -o $@ ./hack/localcp/pause

# The container runtime comes from Debian (bookworm: containerd 1.6.20, runc
# 1.1.5, CNI plugins 1.1.1) rather than the Go module proxy: runc needs cgo
# and libseccomp (seccomp RuntimeDefault), which a `go build` cannot give.
.PHONY: node-runtime
node-runtime: ## Install the local node's container runtime with apt-get (root, Debian/Ubuntu): containerd, runc, containernetworking-plugins. Nothing is started or enabled.
	@if command -v containerd >/dev/null && command -v runc >/dev/null && { test -x /usr/lib/cni/loopback || test -x /opt/cni/bin/loopback; }; then \
		echo ">> containerd, runc and the CNI plugins are installed"; \
	else \
		command -v apt-get >/dev/null || { echo "node-runtime: no apt-get here: install containerd, runc and the CNI plugins (loopback) yourself, or run with NODE=false"; exit 1; }; \
		echo ">> installing containerd, runc and the CNI plugins from Debian (apt-get; the packages start no service without systemd)"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends containerd runc containernetworking-plugins || \
			{ apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends containerd runc containernetworking-plugins; }; \
	fi

# make test installs the node's runtime where it can (Linux, root, apt-get);
# elsewhere it says why on one line and test/e2enode says the same.
.PHONY: node-runtime-if-possible
node-runtime-if-possible:
	@if [ "$$(uname -s)" != Linux ] || [ "$$(id -u)" != 0 ]; then \
		echo ">> no local node here (it needs Linux and root): test/e2enode will be skipped"; \
	elif ! command -v apt-get >/dev/null && ! command -v containerd >/dev/null; then \
		echo ">> no local node here (no containerd, and no apt-get to install it): test/e2enode will be skipped"; \
	else \
		$(MAKE) --no-print-directory node-runtime || echo ">> the node's runtime could not be installed (above): test/e2enode will be skipped"; \
	fi

LOCAL_KUBECONFIG := $(LOCAL)/kubeconfig
NODE_SOCKET      := $(LOCAL)/node/containerd.sock
DEPLOY_TIMEOUT   ?= 120s

.PHONY: test-node
test-node: $(CONTROL_PLANE) $(VELERO_STACK) $(KUBELET) $(KUBE_SCHEDULER) $(PAUSE) build node-runtime-if-possible ## test/e2enode alone: the local node, make deploy-local, a tenant with the real Velero, make undeploy-local (skipped, one line, where the machine cannot run a node).
	$(TEST_ENV) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v ./test/e2enode/... -check.v

.PHONY: run-node
run-node: $(CONTROL_PLANE) $(VELERO_STACK) $(KUBELET) $(KUBE_SCHEDULER) $(PAUSE) build ## The make-run stack with its node and no controller in the foreground, until Ctrl-C: the controller is make deploy-local's Pod.
	$(LOCALCP) --assets $(BIN) --dir $(LOCAL) --oadp-namespace $(OADP_NAMESPACE) --velero=$(WITH_VELERO) --node=true

.PHONY: deploy-local
deploy-local: image ## Deploy onto the node of make run-node (kubeconfig .local/kubeconfig): import the image into the node's containerd, apply config/local (config/default on the node), wait until the Deployment is Available.
	@test -S $(NODE_SOCKET) || { echo "deploy-local: no local node runs ($(NODE_SOCKET) is missing): start one with make run-node"; exit 1; }
	ctr --address $(NODE_SOCKET) --namespace k8s.io images import $(IMAGE_TAR)
	@mkdir -p $(DIST)
	@server=$$(KUBECONFIG=$(LOCAL_KUBECONFIG) $(KUBECTL) config view --minify -o jsonpath='{.clusters[0].cluster.server}'); \
		port=$${server%/}; port=$${port##*:}; \
		$(KUBECTL) kustomize config/local | sed -e 's|image: ghcr.io/nacflow/nacflow:v0.1.0|image: $(IMG)|' \
			-e "s|value: API_SERVER_PORT|value: \"$$port\"|" > $(DIST)/install-local.yaml; \
		echo "wrote $(DIST)/install-local.yaml (image $(IMG), API server port $$port)"
	KUBECONFIG=$(LOCAL_KUBECONFIG) $(KUBECTL) create namespace $(OADP_NAMESPACE) --dry-run=client -o yaml | KUBECONFIG=$(LOCAL_KUBECONFIG) $(KUBECTL) apply -f -
	KUBECONFIG=$(LOCAL_KUBECONFIG) $(KUBECTL) apply --server-side --force-conflicts -f $(DIST)/install-local.yaml
	KUBECONFIG=$(LOCAL_KUBECONFIG) $(KUBECTL) -n $(OADP_NAMESPACE) rollout status deployment/nacflow-controller --timeout=$(DEPLOY_TIMEOUT)

.PHONY: undeploy-local
undeploy-local: ## make undeploy on the node of make run-node: removes the controller, keeps the CRDs and every NAC object.
	$(MAKE) undeploy KUBECONFIG=$(LOCAL_KUBECONFIG)

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code for the API types, the Blueprint CRD's spec.kind enum from the kind registry (hack/kindgen), and the Grafana dashboards (hack/dashboards: config/monitoring/dashboards, the chart's copy and ConfigMaps).
	$(CONTROLLER_GEN) object paths=./api/...
	$(GO) run ./hack/kindgen -enum
	cd hack/dashboards && $(GO) run . -root $(CURDIR)

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRD YAML (config/crd/bases, listed in config/crd/kustomization.yaml by hack/kindgen) and the controller's ClusterRole (config/rbac).
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(GO) run ./hack/kindgen -crds
	$(CONTROLLER_GEN) rbac:roleName=nacflow-manager paths=./controllers/... output:rbac:artifacts:config=config/rbac

.PHONY: fmt
fmt: ## gofmt the tree.
	gofmt -l -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## go vet the module.
	$(GO) vet ./...

.PHONY: build
build: ## Build bin/nac (the manager), bin/kubectl-nac (the kubectl plugin: put bin/ on PATH for `kubectl nac`), bin/localcp and Velero's plugin bin/plugins/velero-plugin-nacflow.
	$(GO) build -ldflags "$(NAC_LDFLAGS)" -o $(NAC) ./cmd/nac
	$(GO) build -o $(NACFLOW_PLUGIN) ./cmd/velero-plugin-nacflow
	$(GO) build -ldflags "$(NAC_LDFLAGS)" -o $(KUBECTL_NAC) ./cmd/kubectl-nac
	install -m 0755 hack/kubectl_complete-nac $(BIN)/kubectl_complete-nac
	$(GO) build -o $(LOCALCP) ./hack/localcp

UNIT_PKGS        := ./api/... ./engine/... ./phases/... ./blueprints/... ./cli/... ./cmd/... ./internal/... ./hack/bench/...
INTEGRATION_PKGS := ./controllers/...
E2E_PKGS         := ./test/e2e/...

.PHONY: lint
lint: vet ## gofmt check and go vet.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# make test's packages: the fast ones (every package but those below: unit
# tests, the chart's, krew's, the image's and the docs' checks), then the
# integration package and every end-to-end package side by side, each on a
# control plane and stack of its own (every port a free one; bin/velero
# serves no metrics on :8080).
FAST_PKGS = $$($(GO) list ./... | grep -v -e /controllers -e /test/)
# hack/dashboards is a module of its own (go list ./... does not reach it):
# its tests check every panel's queries and that the generated files are
# current.
DASHBOARDS_TEST = cd hack/dashboards && $(GO) test -count=1 ./...
SLOW_PKGS = $(INTEGRATION_PKGS) ./test/e2e/... ./test/e2ewalk/... ./test/e2elocalcp/... ./test/e2estorage/... ./test/e2emonitoring/... ./test/e2eoadp/... ./test/failover/... $(if $(filter false,$(NODE)),,./test/e2enode/...)
# What the test binaries read: the prebuilt tools and binaries (bin/), OADP
# NAC's source and its manager.
TEST_ENV = NACFLOW_ASSETS=$(BIN) NACFLOW_BINARIES=$(BIN) NACFLOW_PEERS=$(PEERS) NACFLOW_OADP_NAC=$(OADP_NAC) NACFLOW_OADP_CLI=$(BIN)/oadp-cli
# How many of SLOW_PKGS run at once (they mostly wait on Velero and the API
# server). With e2emonitoring's stack added, 7 at a time loaded the 2 cores
# enough for real Velero to fail backups (its default location briefly
# Unavailable) in test/e2e; 5 leaves them room.
TEST_PARALLEL ?= 5

# OADP's own Non-Admin Controller, built from its source beside the
# repository (../shared/peers; PEERS=DIR to point elsewhere), for
# test/e2eoadp: nacflow takes over what it made.
PEERS ?= $(firstword $(wildcard $(abspath $(CURDIR)/../shared/peers/oadp-non-admin) /work/shared/peers/oadp-non-admin) $(abspath $(CURDIR)/../shared/peers/oadp-non-admin))
OADP_NAC := $(BIN)/oadp-nac-manager

# From a writable copy: go build writes go.sum updates next to go.mod.
$(OADP_NAC):
	@test -f $(PEERS)/go.mod || { echo "OADP NAC's source is not at $(PEERS): set PEERS=DIR"; exit 1; }
	@echo ">> building OADP NAC's manager from $(PEERS) (first time: a few minutes; cached in bin/)"
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && cp -r $(PEERS) $$tmp/oadp && \
		cd $$tmp/oadp && GOFLAGS="$(GOFLAGS) -mod=mod" GOTOOLCHAIN=local $(GO) build -o $@ ./cmd

# OADP's own CLI (kubectl-oadp), both branches the peers hold, built
# unchanged from a writable copy of its source beside OADP NAC's, for
# test/e2eoadp: OADP's users' commands work on nacflow.
OADP_CLI_SRC ?= $(abspath $(PEERS)/../oadp-cli)
OADP_CLI := $(BIN)/oadp-cli/oadp-dev/kubectl-oadp $(BIN)/oadp-cli/narsupport/kubectl-oadp

$(BIN)/oadp-cli/%/kubectl-oadp:
	@test -f $(OADP_CLI_SRC)/$*/go.mod || { echo "OADP's CLI source is not at $(OADP_CLI_SRC)/$*: set PEERS=DIR (OADP NAC's; the CLI is its sibling oadp-cli)"; exit 1; }
	@echo ">> building OADP's CLI ($*) from $(OADP_CLI_SRC)/$* (first time: a few minutes; cached in bin/)"
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && cp -r $(OADP_CLI_SRC)/$* $$tmp/cli && chmod -R u+w $$tmp/cli && \
		cd $$tmp/cli && GOFLAGS="$(GOFLAGS) -mod=mod" GOTOOLCHAIN=local $(GO) build -o $@ .

# test/e2ewalk completes `kubectl nac <TAB>` as a reader's bash does: with
# Debian's bash-completion (kubectl's own completion needs it too).
BASH_COMPLETION := /usr/share/bash-completion/bash_completion

.PHONY: bash-completion
bash-completion: ## Install bash-completion with apt-get where it is missing (make test's walk of getting-started.md completes `kubectl nac <TAB>` with it).
	@test -f $(BASH_COMPLETION) || { \
		command -v apt-get >/dev/null || { echo "bash-completion: $(BASH_COMPLETION) is missing and there is no apt-get: install bash-completion"; exit 1; }; \
		echo ">> installing bash-completion from Debian (apt-get)"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bash-completion >/dev/null || \
			{ apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bash-completion >/dev/null; }; }

.PHONY: test-build
test-build: bash-completion ## Build everything make test runs before any test starts: tools, bin/ (make build), OADP NAC's manager, the integration and end-to-end test binaries (compiled and linked, run with no test), the image's packages.
	@GOGC=$(BUILD_GOGC) $(MAKE) --no-print-directory -j2 KUBE_FIRST=1 $(CONTROL_PLANE) $(NODE_TOOLS) $(OADP_NAC) $(OADP_CLI) $(HELM) $(PROMTOOL) $(PROMETHEUS) $(KREW) $(VALIDATE_KREW) $(VELERO_STACK) build install-manifest
	@echo ">> compiling the integration and end-to-end test binaries"
	@GOGC=$(BUILD_GOGC) $(GO) test -count=1 -run '^$$' $(SLOW_PKGS) > $(BIN)/.test-build.log 2>&1 || { cat $(BIN)/.test-build.log; exit 1; }
	@echo ">> compiling the image's packages (make image, in test/e2enode)"
	@CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) GOGC=$(BUILD_GOGC) $(GO) build -trimpath -o /dev/null ./cmd/nac
	@GOGC=$(BUILD_GOGC) $(GO) build -o /dev/null ./hack/image ./hack/chart ./hack/krew

.PHONY: test
test: test-build lint $(if $(filter false,$(NODE)),,node-runtime-if-possible) ## All tests, once everything is built (make test-build): the fast packages; then integration (real kube-apiserver, kube-controller-manager, etcd) and every e2e package (real Velero and object store; OADP NAC; make deploy-local on the local node, NODE=false: not run) side by side.
	@echo ">> alert rules (promtool)"
	@$(MAKE) --no-print-directory test-rules
	@echo ">> unit and other fast tests"
	$(TEST_ENV) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(FAST_PKGS)
	$(DASHBOARDS_TEST)
	@echo ">> integration and end-to-end tests, $(TEST_PARALLEL) packages at a time"
	@echo '$(TEST_ENV) $(GO) test -count=1 -p $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) -v $(SLOW_PKGS) -check.v'
	@$(TEST_ENV) $(GO) test -count=1 -p $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) -v $(SLOW_PKGS) -check.v 2>&1 | tee $(BIN)/.test-slow.log || \
		{ rc=$$?; $(MAKE) --no-print-directory test-failures; exit $$rc; }

# The verbose log of many packages side by side buries a failing check test
# among thousands of lines: its name and first lines come again at the end.
.PHONY: test-failures
test-failures: ## Print, from the last make test's log (bin/.test-slow.log), each failed gocheck test with its first 40 lines, and each failed package.
	@echo ">> failed tests (bin/.test-slow.log)"
	@awk '/^(FAIL|PANIC|MISS):/ {n = 40} /^(-----|PASS:|OOPS:|OK:)/ {n = 0} n > 0 {print substr($$0, 1, 400); n--}' $(BIN)/.test-slow.log
	@grep -E '^(FAIL\s|--- FAIL)' $(BIN)/.test-slow.log || true

.PHONY: test-rules
test-rules: $(PROMTOOL) ## Check the alert rules (config/monitoring/rules) with promtool and run their unit tests (rules/tests: each alert firing and not), in seconds.
	$(PROMTOOL) check rules config/monitoring/rules/nacflow.rules.yaml
	$(PROMTOOL) test rules config/monitoring/rules/tests/*.yaml

# -check.vv: test/e2emonitoring's log — Prometheus' answers on the alert,
# each panel's data — shows when it passes too.
.PHONY: test-monitoring
test-monitoring: test-rules $(CONTROL_PLANE) $(VELERO_STACK) $(PROMETHEUS) build ## The monitoring's tests: the alert rules' (make test-rules), then test/e2emonitoring alone: a real Prometheus scraping nac and evaluating the rules, a tenant's failed backup firing NacflowTenantBackupFailed and a good one resolving it, every dashboard panel's query answered.
	$(TEST_ENV) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v ./test/e2emonitoring/... -check.vv

.PHONY: test-fast
test-fast: ## The inner loop: unit tests and every package that needs no control plane (make test's first step), in about a minute.
	$(GO) test -count=1 $(FAST_PKGS)
	$(DASHBOARDS_TEST)

.PHONY: test-unit
test-unit: ## Unit tests of the engine, phases, API, blueprints, commands and internal packages (no control plane).
	$(GO) test -count=1 $(UNIT_PKGS)
	$(DASHBOARDS_TEST)

.PHONY: test-integration
test-integration: $(CONTROL_PLANE) ## Integration tests against a real kube-apiserver + etcd.
	$(TEST_ENV) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(INTEGRATION_PKGS)

.PHONY: test-e2e
test-e2e: $(CONTROL_PLANE) $(VELERO_STACK) build install-manifest ## End-to-end tests: the make-run stack with a real Velero server, driven by kubectl, beside test/e2estorage.
	$(TEST_ENV) $(GO) test -count=1 -p 2 -timeout $(TEST_TIMEOUT) -v $(E2E_PKGS) ./test/e2estorage/... -check.v

.PHONY: test-storage
test-storage: $(CONTROL_PLANE) $(VELERO_STACK) build ## test/e2estorage alone: restore tests, usage and quotas of tenants' backups, with the real Velero.
	$(TEST_ENV) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v ./test/e2estorage/... -check.v

.PHONY: test-oadp
test-oadp: $(CONTROL_PLANE) $(VELERO_STACK) $(OADP_NAC) $(OADP_CLI) build ## test/e2eoadp alone: OADP's CLI (both branches, built from PEERS' sibling oadp-cli) works on nacflow; OADP NAC (built from PEERS) makes backups, a restore and a location, nacflow takes them over, with the real Velero.
	$(TEST_ENV) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v ./test/e2eoadp/... -check.v

.PHONY: test-failover
test-failover: $(CONTROL_PLANE) build ## test/failover alone: two nac replicas with leader election on a real kube-apiserver, the leader SIGKILLed in the middle of a burst of 500 NonAdminBackups (Velero played): takeover within the lease duration, time to the new leader's first write, no Velero object made twice, no phase ended twice, the requester webhook answering throughout.
	$(TEST_ENV) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -v ./test/failover/... -check.v

##@ Helm chart and krew plugin manifest

# helm is built from the version hack/helm/go.mod pins, stamped as helm's own
# Makefile does: its version, and the Kubernetes release its client-go speaks
# (helm template's default .Capabilities.KubeVersion and lint's deprecation
# checks use it; unstamped they assume Kubernetes 1.20).
HELM              := $(BIN)/helm
HELM_VERSION      := $(shell awk '{for (i = 1; i < NF; i++) if ($$i == "helm.sh/helm/v3") print $$(i+1)}' hack/helm/go.mod)
HELM_KUBE_MINOR   := $(word 2,$(subst ., ,$(shell awk '$$1=="k8s.io/client-go" {print $$2}' hack/helm/go.mod)))
HELM_LDFLAGS      := -s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	-X helm.sh/helm/v3/internal/version.metadata= \
	-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$(HELM_KUBE_MINOR) \
	-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$(HELM_KUBE_MINOR)

$(HELM):
	@echo ">> building helm $(HELM_VERSION) from the Go module proxy (first time: a few minutes; cached in bin/)"
	cd hack/helm && $(GO) build -o $@ -ldflags "$(HELM_LDFLAGS)" helm.sh/helm/v3/cmd/helm

# promtool (make test-rules: checks and unit-tests the alert rules) and the
# Prometheus server (make test-monitoring), built from the version
# hack/prometheus/go.mod pins (module v0.316.0 is Prometheus 3.16.0), stamped
# with that version. Without the web UI (no builtinassets tag: the API is all
# the tests use) and without the service discoveries (remove_all_sd: file
# and HTTP discovery and static_configs remain), which spares building the
# cloud providers' SDKs.
PROMTOOL           := $(BIN)/promtool
PROMETHEUS         := $(BIN)/prometheus
PROMETHEUS_VERSION := $(shell awk '{for (i = 1; i < NF; i++) if ($$i == "github.com/prometheus/prometheus") {split($$(i+1), v, "."); printf "%d.%d.%s", v[2] / 100, v[2] % 100, v[3]}}' hack/prometheus/go.mod)
PROMETHEUS_LDFLAGS := -s -w -X github.com/prometheus/common/version.Version=$(PROMETHEUS_VERSION)

$(PROMTOOL):
	@echo ">> building promtool $(PROMETHEUS_VERSION) from the Go module proxy (first time: a few minutes; cached in bin/)"
	cd hack/prometheus && $(GO) build -tags remove_all_sd -o $@ -ldflags "$(PROMETHEUS_LDFLAGS)" github.com/prometheus/prometheus/cmd/promtool

$(PROMETHEUS):
	@echo ">> building prometheus $(PROMETHEUS_VERSION) from the Go module proxy (first time: a few minutes; cached in bin/)"
	cd hack/prometheus && $(GO) build -tags remove_all_sd -o $@ -ldflags "$(PROMETHEUS_LDFLAGS)" github.com/prometheus/prometheus/cmd/prometheus

# krew's validator and krew itself (make test installs the generated
# manifest with it, in hack/krew's test), pinned; installed like controller-gen
# (krew's go.mod has no replace lines, so go install pkg@version works).
KREW_RELEASE      ?= v0.4.3
KREW              := $(BIN)/krew
VALIDATE_KREW     := $(BIN)/validate-krew-manifest
KREW_PLATFORMS    ?= linux_amd64 linux_arm64 darwin_amd64 darwin_arm64
# krew wants spec.version a semantic version with a leading v: a release tag
# (git describe: v0.1.0, or v0.1.0-3-gabc1234 after it); an untagged commit
# becomes v0.0.0-g<hash>.
KREW_VERSION      ?= $(if $(filter v%,$(VERSION)),$(VERSION),v0.0.0-g$(VERSION))

$(KREW) $(VALIDATE_KREW):
	@echo ">> installing $(notdir $@) $(KREW_RELEASE)"
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/krew/cmd/$(notdir $@)@$(KREW_RELEASE)

.PHONY: krew
krew: $(VALIDATE_KREW) ## kubectl-nac's krew release: dist/kubectl-nac_<KREW_VERSION>_<os>_<arch>.tar.gz for KREW_PLATFORMS (reproducible) and dist/nac.yaml, plugins/nac.yaml filled in with their sha256, checked by krew's validate-krew-manifest.
	@for p in $(KREW_PLATFORMS); do \
		echo ">> kubectl-nac for $$p"; \
		CGO_ENABLED=0 GOOS=$${p%_*} GOARCH=$${p#*_} $(GO) build -trimpath -ldflags "-s -w $(NAC_LDFLAGS)" -o $(DIST)/krew/$$p/kubectl-nac ./cmd/kubectl-nac || exit 1; \
	done
	$(GO) run ./hack/krew -version $(KREW_VERSION) -bin-dir $(DIST)/krew -dist $(DIST) -template plugins/nac.yaml \
		-file hack/kubectl_complete-nac -platforms "$$(echo $(KREW_PLATFORMS) | tr ' ' ,)" -mtime "$$(git log -1 --format=%ct 2>/dev/null || echo 0)"
	$(VALIDATE_KREW) -manifest $(DIST)/nac.yaml -skip-install
	@cd $(DIST) && sha256sum kubectl-nac_$(KREW_VERSION)_*.tar.gz

# hack/chart's and hack/krew's tests (in make test's go test ./...) run these.
test-node: $(HELM)

.PHONY: chart
chart: ## Generate the Helm chart charts/nacflow's CRDs, templates, values.yaml and Chart.yaml from config/default (hack/chart), and the alert rules' PrometheusRule (config/monitoring and the chart's) from config/monitoring/rules (hack/monitoring); its helpers, monitors and NOTES are hand-written, its dashboards' ConfigMaps come from make generate (hack/dashboards).
	$(KUBECTL) kustomize config/default | $(GO) run ./hack/chart -out charts/nacflow
	$(GO) run ./hack/monitoring

.PHONY: helm-lint
helm-lint: $(HELM) ## helm lint --strict charts/nacflow (make test also renders it and compares with config/default: hack/chart's tests).
	$(HELM) lint --strict charts/nacflow

##@ Install

IMAGE_REPO   ?= ghcr.io/nacflow/nacflow
IMG          ?= $(IMAGE_REPO):$(VERSION)
IMAGE_ARCH   ?= $(shell $(GO) env GOARCH)
IMAGE_TAR    := $(CURDIR)/dist/nacflow-image.tar
KUBECTL      ?= kubectl
DIST         := $(CURDIR)/dist
OADP_NAMESPACE ?= openshift-adp

.PHONY: install-manifest
install-manifest: ## Render config/default (CRDs, RBAC, tenant roles, Deployment, metrics Service) into dist/install.yaml, image IMG.
	@mkdir -p $(DIST)
	$(KUBECTL) kustomize config/default | sed 's|image: ghcr.io/nacflow/nacflow:v0.1.0|image: $(IMG)|' > $(DIST)/install.yaml.tmp.$$$$ && mv $(DIST)/install.yaml.tmp.$$$$ $(DIST)/install.yaml
	@echo "wrote $(DIST)/install.yaml (image $(IMG))"

.PHONY: image
image: ## Build nac's container image without a Docker engine (hack/image, go-containerregistry): the OCI archive dist/nacflow-image.tar (ctr images import, docker load) and its layout dist/nacflow-image-oci, tag IMG (git describe); reproducible, prints the digest.
	@mkdir -p $(DIST)/linux-$(IMAGE_ARCH)
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags "-s -w $(NAC_LDFLAGS)" -o $(DIST)/linux-$(IMAGE_ARCH)/nac ./cmd/nac
	$(GO) run ./hack/image -binary $(DIST)/linux-$(IMAGE_ARCH)/nac -arch $(IMAGE_ARCH) -tag $(IMG) -version $(VERSION) -revision "$(REVISION)" \
		-created "$$(git log -1 --format=%ct 2>/dev/null || echo 0)" -out $(IMAGE_TAR) -oci-layout $(DIST)/nacflow-image-oci | tee $(DIST)/nacflow-image.digest
	@echo "image $(IMG) ($$(cat $(DIST)/nacflow-image.digest)) in $(IMAGE_TAR)"

.PHONY: deploy
deploy: install-manifest ## Install nacflow into the cluster of the current kubeconfig, in the OADP namespace (created if missing).
	$(KUBECTL) create namespace $(OADP_NAMESPACE) --dry-run=client -o yaml | $(KUBECTL) apply -f -
	$(KUBECTL) apply --server-side --force-conflicts -f $(DIST)/install.yaml

.PHONY: undeploy
undeploy: ## Remove the controller, its RBAC, the tenant roles, its status admission policy and its requester webhook; keeps the CRDs and every NAC object (docs/install.md).
	{ $(KUBECTL) kustomize config/controller; echo ---; $(KUBECTL) kustomize config/admission; echo ---; $(KUBECTL) kustomize config/webhook; } | $(KUBECTL) delete --ignore-not-found -f -

.PHONY: docs
docs: ## Generate docs/functions.md (the phase function registry) and docs/cli.md (the kubectl nac command tree).
	@mkdir -p docs
	$(GO) run ./cmd/kubectl-nac funcs > docs/functions.md
	$(GO) run ./hack/clidocs > docs/cli.md

.PHONY: verify-generated
verify-generated: generate manifests docs chart ## Fail when generated files are out of date.
	@git diff --exit-code -- api config docs charts || { echo "generated files are stale: run 'make generate manifests docs chart' and commit"; exit 1; }
	@test -z "$$(git ls-files --others --exclude-standard -- charts config/monitoring)" || { git ls-files --others --exclude-standard -- charts config/monitoring; echo "new generated files: git add them"; exit 1; }

.PHONY: run
# What make run needs, and only that (no helm, krew, controller-gen or test
# binaries): two builds at a time, so that one's links and module downloads
# overlap the other's compiles.
RUN_TOOLS = $(CONTROL_PLANE) $(if $(filter false,$(WITH_VELERO)),,$(VELERO_STACK)) $(NODE_TOOLS) $(if $(filter-out 0 false,$(MONITORING)),$(PROMETHEUS))
# MONITORING=1: make run also starts a Prometheus server (bin/prometheus) on
# 127.0.0.1:9090 that scrapes the controller and evaluates nacflow's alert
# rules (localcp --monitoring).
MONITORING ?=

.PHONY: run-tools
run-tools:
	@GOGC=$(BUILD_GOGC) $(MAKE) --no-print-directory -j2 KUBE_FIRST=1 $(RUN_TOOLS) build

run: run-tools ## Local control plane, object store, Velero and CRDs, a node where the machine can run one (NODE=false: none); the controller in the foreground. MONITORING=1: and Prometheus with nacflow's alert rules.
	$(LOCALCP) --assets $(BIN) --dir $(LOCAL) --oadp-namespace $(OADP_NAMESPACE) --velero=$(WITH_VELERO) --node=$(NODE) $(if $(filter-out 0 false,$(MONITORING)),--monitoring) \
		--requester-webhook config/webhook/mutating_webhook_configuration.yaml -- \
		$(NAC) --oadp-namespace $(OADP_NAMESPACE) --metrics-bind-address 127.0.0.1:8090 --health-probe-bind-address 127.0.0.1:8091 \
		--webhook-port 9443 --webhook-host 127.0.0.1 --webhook-cert-dir $(LOCAL)/webhook-certs --webhook-configuration nacflow-requester-local \
		$(if $(filter false,$(WITH_VELERO)),--restore-precheck=false)

BENCH_N ?= 1000
BENCH_M ?= 100
BENCH_C ?= 10
BENCH_SECRETS ?= 0
# The burst completes every NAB but the one completed first.
BENCH_BURST ?= $(shell expr $(BENCH_N) - 1)
# Velero's download service, one bench run each: served (the bench plays it), absent (nothing serves DownloadRequests).
BENCH_DOWNLOADS ?= served absent
# More bench flags, e.g. -burst-wait-verify (also wait until every completed NAB's plan ended: +2 min absent).
BENCH_FLAGS ?=
BENCH_RESTART_N ?= 10000
BENCH_RESTART_M ?= 1000
# make bench-scale's NABs and namespaces, unless BENCH_N or BENCH_M is given on make's command line (or in the environment).
BENCH_SCALE_N ?= 100000
BENCH_SCALE_M ?= 1000
bench_scale = $(if $(filter command line environment,$(origin $(1))),$($(1)),$(2))
# BENCH_OADP=1: bench-scale also runs OADP NAC (built from PEERS) on a control plane of its own, with BENCH_OADP_N NABs (0: min(N, 2000)).
BENCH_OADP ?=
BENCH_OADP_N ?= 0

.PHONY: bench
bench: $(CONTROL_PLANE) build ## Benchmarks: the engine's Go benchmarks, then nac at BENCH_N NABs over BENCH_M namespaces (writes, throughput, latency, CPU, RSS), one completion and a burst of BENCH_BURST (CPU, reconciles and writes per completion), once per BENCH_DOWNLOADS (served absent); BENCH_FLAGS adds bench flags.
	$(GO) test -run '^$$' -bench . -benchmem ./engine/
	@mkdir -p $(LOCAL)
	$(GO) build -o $(BIN)/bench ./hack/bench
	@for d in $(BENCH_DOWNLOADS); do \
		echo ">> bench: Velero's download service $$d"; \
		$(BIN)/bench -assets $(BIN) -nac $(NAC) -n $(BENCH_N) -m $(BENCH_M) -c $(BENCH_C) -secrets $(BENCH_SECRETS) \
			-burst $(BENCH_BURST) -downloads $$d -json $(LOCAL)/bench-$(BENCH_N)-$$d.json $(BENCH_FLAGS) || exit 1; \
	done

.PHONY: bench-restart
bench-restart: $(CONTROL_PLANE) build ## Restart benchmark: BENCH_RESTART_N NABs over BENCH_RESTART_M namespaces settled (a third each Completed, waiting, Failed), nac restarted: seconds to ready, writes until quiet.
	@mkdir -p $(LOCAL)
	$(GO) build -o $(BIN)/bench ./hack/bench
	$(BIN)/bench -assets $(BIN) -nac $(NAC) -restart -n $(BENCH_RESTART_N) -m $(BENCH_RESTART_M) -c $(BENCH_C) \
		-json $(LOCAL)/bench-restart-$(BENCH_RESTART_N).json $(BENCH_FLAGS)

.PHONY: bench-scale
bench-scale: $(CONTROL_PLANE) build $(if $(filter-out 0 false,$(BENCH_OADP)),$(OADP_NAC)) ## Scale benchmark: BENCH_N NABs (default 100,000) over BENCH_M namespaces (1,000) created and completed until every plan ended: peak RSS and heap, etcd bytes per NAB by part, events dropped, then a restart (ready, quiet, writes); BENCH_OADP=1 measures OADP NAC's etcd bytes beside. Writes .local/bench-scale.json.
	@mkdir -p $(LOCAL)
	$(GO) build -o $(BIN)/bench ./hack/bench
	$(BIN)/bench -assets $(BIN) -nac $(NAC) -scale -n $(call bench_scale,BENCH_N,$(BENCH_SCALE_N)) -m $(call bench_scale,BENCH_M,$(BENCH_SCALE_M)) -c $(BENCH_C) \
		$(if $(filter-out 0 false,$(BENCH_OADP)),-oadp $(OADP_NAC) -oadp-n $(BENCH_OADP_N) -oadp-crds $(PEERS)/config/crd/bases) \
		-json $(LOCAL)/bench-scale.json $(BENCH_FLAGS)

.PHONY: clean
clean: ## Remove build output and the local control plane's state (keeps the cached tools).
	rm -rf $(NAC) $(KUBECTL_NAC) $(BIN)/kubectl_complete-nac $(LOCALCP) $(NACFLOW_PLUGIN) $(LOCAL)

.PHONY: clean-local
clean-local: ## Remove .local, the local stack's state: object store (s3.db), logs, kubeconfig; keeps bin/ and build output.
	rm -rf $(LOCAL)
