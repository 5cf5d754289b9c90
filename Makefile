# vpc-cni: one static binary, the CNI plugin (as vpc-cni) and the admin CLI (as vpcctl).
GO       ?= go
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -s -w -X vpc-cni/commands.buildVersion=$(VERSION) -X vpc-cni/commands.buildCommit=$(COMMIT)
BIN      := bin

.PHONY: build test bench lint demo clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -tags urfave_cli_no_docs -ldflags '$(LDFLAGS)' -o $(BIN)/vpcctl .
	ln -sf vpcctl $(BIN)/vpc-cni

# The README's test command. As root the end-to-end tests build their own network namespaces.
test: build
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...

bench: build
	$(GO) test -run '^$$' -bench . -benchmem -timeout 30m ./...

lint:
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

demo: build
	./scripts/demo.sh

clean:
	rm -rf $(BIN)
