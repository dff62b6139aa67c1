# nacflow — developer entry points. `make help` lists them.
#
# Everything this Makefile needs is built here from the Go module proxy and
# cached under bin/: the local control plane (kube-apiserver, etcd; no Docker
# and no envtest download site are needed) and controller-gen.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

BIN          := $(CURDIR)/bin
LOCAL        := $(CURDIR)/.local
GO           ?= go
# Kubernetes release of the local control plane; hack/tools/go.mod pins the
# same release and its staging modules.
KUBE_VERSION      ?= v1.33.13
KUBE_MINOR        := $(word 2,$(subst ., ,$(KUBE_VERSION)))
CONTROLLER_TOOLS_VERSION ?= v0.18.0
OADP_NAMESPACE    ?= openshift-adp
TEST_TIMEOUT      ?= 15m

KUBE_APISERVER  := $(BIN)/kube-apiserver
ETCD            := $(BIN)/etcd
CONTROLLER_GEN  := $(BIN)/controller-gen
NAC             := $(BIN)/nac
LOCALCP         := $(BIN)/localcp

VERSION_PKG := k8s.io/component-base/version
KUBE_LDFLAGS := -s -w \
	-X $(VERSION_PKG).gitVersion=$(KUBE_VERSION) \
	-X $(VERSION_PKG).gitMajor=1 \
	-X $(VERSION_PKG).gitMinor=$(KUBE_MINOR) \
	-X $(VERSION_PKG).gitTreeState=clean \
	-X k8s.io/client-go/pkg/version.gitVersion=$(KUBE_VERSION)

.PHONY: help
help: ## Show the targets.
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

##@ Tools (built once, cached in bin/)

$(KUBE_APISERVER):
	@echo ">> building kube-apiserver $(KUBE_VERSION) from the Go module proxy (first time: several minutes on 2 cores; cached in bin/)"
	cd hack/tools && $(GO) build -o $@ -ldflags "$(KUBE_LDFLAGS)" k8s.io/kubernetes/cmd/kube-apiserver

$(ETCD):
	@echo ">> building etcd from the Go module proxy (first time: a minute or two; cached in bin/)"
	cd hack/tools && $(GO) build -o $@ ./etcd

$(CONTROLLER_GEN):
	@echo ">> installing controller-gen $(CONTROLLER_TOOLS_VERSION)"
	GOBIN=$(BIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)

.PHONY: tools
tools: $(KUBE_APISERVER) $(ETCD) $(CONTROLLER_GEN) ## Build the control plane and controller-gen if missing.

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code for the API types.
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRD YAML (config/crd/bases) and the controller's ClusterRole (config/rbac).
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=nacflow-manager paths=./controllers/... output:rbac:artifacts:config=config/rbac

.PHONY: fmt
fmt: ## gofmt the tree.
	gofmt -l -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## go vet the module.
	$(GO) vet ./...

.PHONY: build
build: ## Build bin/nac and bin/localcp.
	$(GO) build -o $(NAC) ./cmd/nac
	$(GO) build -o $(LOCALCP) ./hack/localcp

.PHONY: test
test: $(KUBE_APISERVER) $(ETCD) vet ## Unit and integration tests against a real kube-apiserver + etcd.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	NACFLOW_ASSETS=$(BIN) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...

.PHONY: verify-generated
verify-generated: generate manifests ## Fail when generated files are out of date.
	@git diff --exit-code -- api config || { echo "generated files are stale: run 'make generate manifests' and commit"; exit 1; }

.PHONY: run
run: $(KUBE_APISERVER) $(ETCD) build ## Start a local control plane with CRDs and run the controller in the foreground.
	$(LOCALCP) --assets $(BIN) --dir $(LOCAL) --oadp-namespace $(OADP_NAMESPACE) -- \
		$(NAC) --oadp-namespace $(OADP_NAMESPACE) --metrics-bind-address 127.0.0.1:8090 --health-probe-bind-address 127.0.0.1:8091

.PHONY: clean
clean: ## Remove build output and the local control plane's state (keeps the cached tools).
	rm -rf $(NAC) $(LOCALCP) $(LOCAL)
