# The language clock probes that compile to one static program each (issue 36):
# C++ twice (libstdc++ and libc++), Rust and Go, built into LANG_DIR. Static,
# so that they run as they are in os-vm's initramfs. Included by the Makefile;
# each rule names the Debian package when its toolchain is missing, so that
# `make -k lang` builds every probe whose toolchain is there.
LANG_NATIVE := $(LANG_DIR)/probe-cpp-libstdcxx $(LANG_DIR)/probe-cpp-libcxx $(LANG_DIR)/probe-rust $(LANG_DIR)/probe-go
LANG_PROBES += $(LANG_NATIVE)

LANG_CXXFLAGS := -std=c++17 -O2 -g $(PREFIX_MAP) -static -pthread $(WARNINGS)

# g++ -print-file-name gives the bare name back when it finds no such file.
$(LANG_DIR)/probe-cpp-libstdcxx: os/lang/cpp/probe.cpp
	@command -v g++ >/dev/null || { echo "error: g++ not found: install 'g++' (or run 'make deps')"; exit 1; }
	@case "$$(g++ -print-file-name=libstdc++.a)" in /*) ;; *) echo "error: static libstdc++ not found: install 'g++' (libstdc++-12-dev) (or run 'make deps')"; exit 1;; esac
	@test -r /usr/lib/x86_64-linux-gnu/libc.a || { echo "error: static glibc not found: install 'libc6-dev' (or run 'make deps')"; exit 1; }
	@mkdir -p $(dir $@)
	$(call say,CXX,$@)g++ $(LANG_CXXFLAGS) -o $@ $<

# Debian's libc++-dev and libc++abi-dev carry libc++.a and libc++abi.a: static too.
$(LANG_DIR)/probe-cpp-libcxx: os/lang/cpp/probe.cpp
	@command -v clang++ >/dev/null || { echo "error: clang++ not found: install 'clang' (or run 'make deps')"; exit 1; }
	@for a in libc++.a libc++abi.a; do case "$$(clang++ -stdlib=libc++ -print-file-name=$$a)" in /*) ;; \
		*) echo "error: static $$a not found: install 'libc++-dev' and 'libc++abi-dev' (or run 'make deps')"; exit 1;; esac; done
	@test -r /usr/lib/x86_64-linux-gnu/libc.a || { echo "error: static glibc not found: install 'libc6-dev' (or run 'make deps')"; exit 1; }
	@mkdir -p $(dir $@)
	$(call say,CXX,$@)clang++ -stdlib=libc++ $(LANG_CXXFLAGS) -o $@ $<

# cargo --offline: the probe has no dependencies, so nothing is fetched. Not
# position-independent (relocation-model=static), as the C++ probes: std's
# now() is then a direct call, not one through the GOT. The
# rustc that cargo runs stamps its version into the program (`info`). The
# lock file is version 3, which Debian 12's cargo (0.66) still reads. Without
# LD_PRELOAD: cargo and rustc 1.95 (rustup's proxies) never return under
# libfaketime's (Debian 12's 0.9.10),
# which the rebuild check puts under the whole make (tests/release), and the
# probe holds no date to fake.
LANG_RUST_SRCS := os/lang/rust/Cargo.toml os/lang/rust/Cargo.lock os/lang/rust/src/main.rs
LANG_RUST_TARGET := $(LANG_DIR)/rust-target
$(LANG_DIR)/probe-rust: $(LANG_RUST_SRCS)
	@command -v cargo >/dev/null || { echo "error: cargo not found: install 'cargo' and 'rustc' (or run 'make deps')"; exit 1; }
	@mkdir -p $(dir $@)
	$(call say,CARGO,$@)unset LD_PRELOAD; CB_RUSTC_VERSION="$$($${RUSTC:-rustc} --version)" CARGO_TARGET_DIR=$(abspath $(LANG_RUST_TARGET)) \
		RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=static --remap-path-prefix=$(CURDIR)=." \
		cargo build --release --offline --quiet --locked --target x86_64-unknown-linux-gnu --manifest-path os/lang/rust/Cargo.toml
	$(Q)cp $(LANG_RUST_TARGET)/x86_64-unknown-linux-gnu/release/probe-rust $@

# CGO_ENABLED=0: no libc, a static program. GOTOOLCHAIN=local: the go found
# here builds it (a newer go would not fetch another); GOPROXY=off: nothing
# is downloaded, the standard library is all it uses. Its build cache is
# under build/ unless GOCACHE says where (a CI container may have no HOME).
LANG_GO_SRCS := os/lang/go/go.mod os/lang/go/main.go os/lang/go/tsc_amd64.s
$(LANG_DIR)/probe-go: $(LANG_GO_SRCS)
	@command -v go >/dev/null || { echo "error: go not found: install 'golang-go' (or run 'make deps')"; exit 1; }
	@mkdir -p $(dir $@)
	$(call say,GO,$@)cd os/lang/go && CGO_ENABLED=0 GOTOOLCHAIN=local GOPROXY=off GOFLAGS= \
		GOCACHE=$${GOCACHE:-$(abspath $(LANG_DIR))/go-cache} go build -trimpath -buildvcs=false -o $(abspath $@) .
