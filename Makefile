# vpc-cni: one static binary, the CNI plugin (as vpc-cni) and the admin CLI (as vpcctl).
GO       ?= go
# One source for the version: the chart's appVersion, which is also the image's tag and the chart's default image.
APP_VERSION := $(shell sed -n 's/^appVersion: *"*\([^"]*\)"*/\1/p' deploy/helm/vpc-cni/Chart.yaml)
VERSION  ?= $(APP_VERSION)
COMMIT   ?= $(shell git describe --always --dirty --abbrev=7 --exclude='*' 2>/dev/null || echo unknown)
# The commit's date, not the clock's, so two builds of one commit are the same bytes.
BUILD_DATE ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo unknown)
LDFLAGS  := -s -w -X vpc-cni/commands.buildVersion=$(VERSION) -X vpc-cni/commands.buildCommit=$(COMMIT) \
	-X vpc-cni/commands.buildDate=$(BUILD_DATE)
BIN      := bin

.PHONY: build image test cluster cluster-build conformance cluster-down test-cluster chaos bench bench-plugin bench-scrape-flood lint demo clean manifests knobs

CHAOS_DURATION ?= 10m
CHAOS_FAMILY ?= ipv4
# The faults are listed in docs/development.md (The chaos run). CHAOS_STATE_FAULTS
# removes, empties or truncates state.db at random moments (with the operator's
# state rebuild after each); CHAOS_SCRAPE_FLOOD floods the DaemonSet's loop's
# metrics port with keep-alive scrapers. Both on unless set to false.
CHAOS_STATE_FAULTS ?= true
CHAOS_SCRAPE_FLOOD ?= true
# CHAOS_KEEP=dir keeps a copy of the state dir (state.db, plugin.log) of a run with violations.
CHAOS_KEEP ?=
# CHAOS_PROFILES: network profiles the run's pods pick in turn (empty: none)
CHAOS_PROFILES ?= gold,blue

build:
	CGO_ENABLED=0 $(GO) build -trimpath -tags urfave_cli_no_docs -ldflags '$(LDFLAGS)' -o $(BIN)/vpcctl .
	ln -sf vpcctl $(BIN)/vpc-cni

# The DaemonSet's image as an OCI archive, with no container engine: push it with
# `skopeo copy oci-archive:bin/vpc-cni-image.tar docker://$(IMAGE):$(IMAGE_TAG)` (docs/install.md).
IMAGE     ?= vpc-cni
IMAGE_TAG ?= $(VERSION)
image: build
	$(GO) run ./deploy/image --binary $(BIN)/vpcctl --ref $(IMAGE):$(IMAGE_TAG) --out $(BIN)/vpc-cni-image.tar

# What a target needs of the machine, checked before it builds or starts
# anything (scripts/prereqs.sh: one line per rule).
prereqs-%:
	@scripts/prereqs.sh $*

# The README's test command. As root the end-to-end tests build their own network namespaces.
test: build
	@scripts/prereqs.sh test
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...

# The chaos run (root): parallel ADD/DEL, reconciles, pool warm changes, EC2
# faults and SIGKILLs for CHAOS_DURATION, then the node's invariants;
# CHAOS_FAMILY=ipv6 or dual runs it with IPv6-only or dual-stack pods.
chaos: prereqs-chaos build
	$(GO) test -count=1 -run '^TestChaos$$' -timeout 60m ./e2e/ -chaos.duration=$(CHAOS_DURATION) -chaos.family=$(CHAOS_FAMILY) -chaos.state-faults=$(CHAOS_STATE_FAULTS) -chaos.scrape-flood=$(CHAOS_SCRAPE_FLOOD) -chaos.profiles=$(CHAOS_PROFILES) -chaos.keep=$(CHAOS_KEEP) -v

bench: build
	$(GO) test -run '^$$' -bench . -benchmem -timeout 30m ./...

# The plugin figures (root): vpc-cni against ptp + host-local built as upstream
# releases them, every plugin installed by copy, rounds alternated; each table
# gives the median and p90 of ADD, DEL and VERSION and the load average. Churn
# (ADD then DEL, one pod at a time) and the VERSION start-up (against an empty
# Go binary, one linking only the SDK and bbolt, and ptp) take 200 rounds;
# burst (20 ADDs in a row, then 20 DELs) 10 rounds of 40 calls per contestant;
# the fresh-node burst (30 ADDs at once, inline grow) 10 new nodes.
# BEFORE=path/to/an/older/vpcctl adds it to the same rounds; VPC_CNI_BENCH_BEFORE_ENV
# (NAME=value ...) is given to it alone (the same binary with GOMAXPROCS=1, say).
bench-plugin: build
	VPC_CNI_BENCH_BEFORE=$(BEFORE) $(GO) test -count=1 -run '^$$' -bench 'Churn|VersionStartup' -benchtime 200x -timeout 30m ./e2e/
	VPC_CNI_BENCH_BEFORE=$(BEFORE) $(GO) test -count=1 -run '^$$' -bench 'Burst' -benchtime 10x -timeout 30m ./e2e/

# The metrics server under attack (root): ADD+DEL rounds of one pod with no scraper, then as many
# under 1,000 keep-alive /metrics scrapers, against the DaemonSet's loop; the loop's peak RSS, fds,
# threads. Figures in docs/design.md (Performance).
bench-scrape-flood: build
	$(GO) test -count=1 -run '^$$' -bench 'AddUnderScrapeFlood' -benchtime 100x -timeout 30m ./e2e/

# The knob registry (settings/knobs.go) into the docs' Type/Default lines, and a knob new to it
# into docs/configuration.md, deploy/config.example and the chart's values; the tests of docs
# and deploy fail while they differ. Then `make manifests` if the chart's render changed.
knobs:
	$(GO) test -count=1 -run '^TestConfigurationPageTypesAndDefaultsAreTheRegistrys$$' ./docs/ -update-knobs
	$(GO) test -count=1 -run '^(TestConfigExampleFollowsTheRegistry|TestChartValuesFollowTheRegistry|TestChartProfileFieldsAreTheRegistrys)$$' ./deploy/ -update-knobs

# deploy/kubernetes/ from the Helm chart's default render (helm from the Go module proxy, cached
# in ~/.cache/vpc-cni-e2e/); deploy's tests fail while the two differ.
manifests:
	$(GO) test -count=1 -run '^TestManifestsAreTheHelmChartsDefaultRender$$' ./deploy/ -update

# A Kubernetes cluster in namespaces on this machine (root): etcd and the control plane, two
# nodes (containerd 2.x, kubelet) on the EC2 emulator with one simulated VPC, vpc-cni from the
# Helm chart's DaemonSet. Kubernetes, etcd, containerd and helm are built from the Go module
# proxy and cached in ~/.cache/vpc-cni-e2e/ (cold: see docs/development.md). Everything the
# cluster makes lives under CLUSTER_DIR; cluster-down removes it.
CLUSTER_DIR ?= /tmp/vpc-cni-cluster
CLUSTER_WATCH ?= 10m

cluster:
	@scripts/prereqs.sh cluster
	$(GO) build -tags cluster -o $(BIN)/vpc-cni-cluster ./e2e/cluster
	$(BIN)/vpc-cni-cluster up --detach --dir $(CLUSTER_DIR)

# Kubernetes' own sig-network checks that need no cloud provider (e2e.test and agnhost built
# from the module proxy, cached), against the cluster make cluster left up.
conformance:
	@scripts/prereqs.sh conformance
	$(GO) build -tags cluster -o $(BIN)/vpc-cni-cluster ./e2e/cluster
	$(BIN)/vpc-cni-cluster conformance --dir $(CLUSTER_DIR)

# Only build (or find cached) what the cluster runs; .ci/run bounds this step's time.
cluster-build:
	$(GO) build -tags cluster -o $(BIN)/vpc-cni-cluster ./e2e/cluster
	$(BIN)/vpc-cni-cluster build --dir $(CLUSTER_DIR)

cluster-down:
	$(GO) build -tags cluster -o $(BIN)/vpc-cni-cluster ./e2e/cluster
	$(BIN)/vpc-cni-cluster down --dir $(CLUSTER_DIR)

# The cluster tier: brings up a cluster of its own, checks it through the API, removes it.
# CLUSTER_WATCH is how long the full node is watched (the issue's 10 minutes by default).
CLUSTER_TIMEOUT ?= 90m
test-cluster:
	@scripts/prereqs.sh test-cluster
	$(GO) test -tags cluster -count=1 -timeout $(CLUSTER_TIMEOUT) ./e2e/cluster/ -v -cluster.watch=$(CLUSTER_WATCH)

# -tags cluster adds the cluster tier (e2e/cluster), the only code behind the tag.
lint:
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags cluster ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags cluster ./...

# The build takes minutes on a cold cache and prints nothing: say so first.
demo: prereqs-demo
	@echo "building $(BIN)/vpcctl (first time: a few minutes)..."
	@$(MAKE) --no-print-directory build
	./scripts/demo.sh

clean:
	rm -rf $(BIN)
