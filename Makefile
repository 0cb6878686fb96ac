# computerfs build, test and benchmark entry points.
GO      ?= go
BIN     := bin
GOFLAGS ?=

.PHONY: all build run install install-systemd uninstall test test-short bench gobench vet fmt proto clean

all: build

# The daemon and CLI, and the built-in backends beside it (where the
# daemon looks for them first). Plugins are static (CGO_ENABLED=0): the
# container plugin's init (computerfs-container-init, beside it) must run
# in any configured rootfs.
PLUGINS := $(patsubst cmd/plugin-%,%,$(wildcard cmd/plugin-*))
build:
	@mkdir -p $(BIN)
	$(GO) build $(GOFLAGS) -o $(BIN)/computerfs ./cmd/computerfs
	CGO_ENABLED=0 $(GO) build $(GOFLAGS) -o $(BIN)/computerfs-container-init ./cmd/computerfs-container-init
	@for p in $(PLUGINS); do echo "CGO_ENABLED=0 $(GO) build $(GOFLAGS) -o $(BIN)/computerfs-plugin-$$p ./cmd/plugin-$$p"; \
		CGO_ENABLED=0 $(GO) build $(GOFLAGS) -o $(BIN)/computerfs-plugin-$$p ./cmd/plugin-$$p || exit 1; done

# Install the daemon and the built-in backends together in
# $(PREFIX)/lib/computerfs (the daemon looks for its plugins beside its
# own binary, symlinks resolved), with computerfs linked into
# $(PREFIX)/bin. DESTDIR stages a package.
PREFIX ?= /usr/local
LIBDIR := $(PREFIX)/lib/computerfs
install: build
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN)/computerfs $(BIN)/computerfs-container-init $(wildcard $(BIN)/computerfs-plugin-*) $(DESTDIR)$(LIBDIR)/
	ln -sfn ../lib/computerfs/computerfs $(DESTDIR)$(PREFIX)/bin/computerfs

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/computerfs
	rm -rf $(DESTDIR)$(LIBDIR)
	rm -f $(DESTDIR)$(SYSTEMDDIR)/computerfs@.service

# The systemd unit template (contrib/systemd), its ExecStart pointed at
# $(PREFIX)/bin/computerfs. Then: systemctl daemon-reload, and
# systemctl enable --now computerfs@NAME (see the unit's comments).
SYSTEMDDIR ?= /etc/systemd/system
install-systemd:
	install -d $(DESTDIR)$(SYSTEMDDIR)
	sed 's|/usr/local/bin/computerfs|$(PREFIX)/bin/computerfs|' contrib/systemd/computerfs@.service > $(DESTDIR)$(SYSTEMDDIR)/computerfs@.service
	chmod 0644 $(DESTDIR)$(SYSTEMDDIR)/computerfs@.service

# Build, then mount the default workspace (~/.local/share/computerfs/default.cfs)
# at ~/computerfs in the foreground, creating it on first use (--create).
# Ctrl-C unmounts cleanly.
run: build
	$(BIN)/computerfs mount --create

vet:
	$(GO) vet ./...

fmt:
	gofmt -l -w .

# Everything, as CI runs it: vet, then every test with the race detector.
test: build vet
	@test -z "$$(gofmt -l . | tee /dev/stderr)" || (echo "gofmt needed" && exit 1)
	$(GO) test -race -count=1 -timeout 30m ./...
	# The fault-injection test (2,000 byte flips, a child process each
	# batch) without the race detector, which would make it take 10 minutes.
	$(GO) test -count=1 -timeout 15m -run '^TestFaultInjection$$' ./fs

test-short: build
	$(GO) test -short -count=1 ./...

# The side-by-side benchmark suite (root: FUSE, tmpfs, drop_caches); see BENCHMARKS.md.
bench: build
	$(BIN)/computerfs bench --json bench.json --svg bench.svg

# Go benchmarks of a few workloads.
gobench: build
	$(GO) test -run '^$$' -bench . -benchtime 3x ./bench/...

# Regenerate pluginapi/pb from pluginapi/proto (needs protoc, from Debian's
# protobuf-compiler, and the two Go plugins below). The output is committed.
PROTOC_GEN_GO      := google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC := google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
proto:
	GOBIN=$(CURDIR)/$(BIN)/tools $(GO) install $(PROTOC_GEN_GO)
	GOBIN=$(CURDIR)/$(BIN)/tools $(GO) install $(PROTOC_GEN_GO_GRPC)
	PATH=$(CURDIR)/$(BIN)/tools:$$PATH protoc -I pluginapi/proto \
		--go_out=pluginapi/pb --go_opt=paths=source_relative \
		--go-grpc_out=pluginapi/pb --go-grpc_opt=paths=source_relative \
		pluginapi/proto/*.proto

clean:
	rm -rf $(BIN)
