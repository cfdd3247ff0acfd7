# toolhost build. `make run` builds everything and runs the main job;
# `make test` builds everything and runs every test.

CARGO       ?= cargo
WASM_TARGET := wasm32-wasip2
GUEST_OUT   := guest-plugins/target/$(WASM_TARGET)/release
PLUGIN_DIR  := build/plugins
TOOLHOST    := target/release/toolhost

# The plugins bundled in the default plugin directory, in registration order.
BUNDLED := format_pipeline:10-format-pipeline text_tools:20-text-tools

.PHONY: all run setup plugins host test lint bench clean

all: host plugins

## Toolchains: the wasm32-wasip2 target for Rust plugins.
setup:
	@command -v rustup >/dev/null || { echo "rustup is required: https://rustup.rs" >&2; exit 1; }
	@rustup target list --installed | grep -qx $(WASM_TARGET) || rustup target add $(WASM_TARGET)

## Every Rust guest plugin (bundled plugins and test fixtures).
plugins: setup
	cd guest-plugins && $(CARGO) build --release --target $(WASM_TARGET) --locked
	@mkdir -p $(PLUGIN_DIR)
	@for entry in $(BUNDLED); do \
		crate=$${entry%%:*}; file=$${entry##*:}; \
		cp $(GUEST_OUT)/$$crate.wasm $(PLUGIN_DIR)/$$file.wasm; \
	done
	@echo "plugins in $(PLUGIN_DIR): $$(ls $(PLUGIN_DIR) | tr '\n' ' ')"

host:
	$(CARGO) build --release --locked -p toolhost

## The main job: load the bundled plugins and show what they do to the tools.
run: host plugins
	$(TOOLHOST) --plugins $(PLUGIN_DIR) plugins
	$(TOOLHOST) --plugins $(PLUGIN_DIR) tools

test: host plugins venv upstream
	$(CARGO) test --release --locked --workspace

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --release --locked --workspace --all-targets -- -D warnings
	cd guest-plugins && $(CARGO) fmt --all -- --check
	cd guest-plugins && $(CARGO) clippy --release --locked --target $(WASM_TARGET) -- -D warnings

bench: host plugins
	$(CARGO) bench --locked -p toolhost --bench plugins
	$(CARGO) bench --locked -p toolhost --bench pipeline

clean:
	$(CARGO) clean
	cd guest-plugins && $(CARGO) clean
	rm -rf build

# --- MCP front (wt-mcp): the Python MCP client the integration tests drive
# `toolhost serve` with, and the third-party MCP servers they proxy. ---
VENV := build/venv

## One venv for every Python tool, from the pinned requirements.txt.
venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $@

## Upstream MCP servers from npm, pinned by tests/upstream/package-lock.json.
upstream: tests/upstream/node_modules/.installed
tests/upstream/node_modules/.installed: tests/upstream/package-lock.json
	cd tests/upstream && npm ci --no-audit --no-fund
	@touch $@

.PHONY: venv upstream
# --- end MCP front ---
