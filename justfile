# The project's tasks (https://github.com/casey/just). Each recipe is a thin wrapper over a
# script in ci/ or a cargo command, so the scripts stay the single source and run without just.

# The whole test suite as CI runs it (installs skopeo/umoci; starts dockerd, registries and
# podman for the live-source tests).
test:
    bash ci/test.sh

# Unit and integration tests that need no services.
test-quick:
    cargo test --all-targets

# .pre-commit-hooks.yaml under the real pre-commit, on a sample repository.
pre-commit-test:
    cargo build
    bash ci/pre-commit-test.sh target/debug/gpulint

# The squashed tree against `umoci unpack` on CASES random layer sequences (issue 24); SEED
# defaults to a new one each run (printed on failure, to replay).
squash-fuzz cases="10000" seed="":
    bash ci/squash-fuzz.sh {{cases}} {{seed}}

# Format and lint as CI does.
lint:
    cargo fmt --check
    cargo clippy --all-targets -- -D warnings

# actionlint over the GitHub workflows (installed by ci/install-tools.sh).
actionlint:
    bash ci/actionlint.sh

# The module graph of src/ at depth two (`source::daemon`), counting super:: paths, and its
# cycles (fails when there is one).
modgraph:
    python3 ci/modgraph.py 2 --edges

# Every src file with more than 700 lines of non-test code (fails when there is one).
file-sizes:
    python3 ci/file-sizes.py

# Review and accept changed rule snapshots (tests/integration/snapshots/).
snapshots:
    cargo insta review

# Regenerate docs/rules/ from the rules' own metadata.
docs:
    UPDATE_DOCS=1 cargo test --lib rules::docs

# The rules on ../shared/realworld (or CORPUS=DIR) vs the expert labels.
corpus:
    bash ci/corpus.sh

# Benchmarks: ratios against a baseline measured in the same run.
bench-inventory mib="2048":
    bash ci/bench-inventory.sh {{mib}}

bench-registry gb="2":
    bash ci/bench-registry.sh {{gb}}

# Issue 31: N images sharing base layers, one run vs one process per image.
bench-sweep n="50":
    bash ci/bench-sweep.sh {{n}}

# Issue 15: a real torch 2.8.0 image (built once under ~/.cache/gpulint-bench) against igzip.
bench-image:
    bash ci/bench-image.sh

# Config linting: linear in input size per class, Dockerfile throughput vs hadolint, lint of
# a 10k-file repository.
bench-configs:
    bash ci/bench-configs.sh

# Issue 15: ISA-L (isal-rs) against flate2/zlib-rs on crafted, cut and corrupted gzip streams
# (README, "Measured and not kept"). Needs nasm, autoconf, automake, libtool.
decoder-eval:
    cargo run --quiet --release --manifest-path tools/decoder-eval/Cargo.toml --bin semantics
    cargo run --quiet --release --manifest-path tools/decoder-eval/Cargo.toml --bin sweep
    cargo run --quiet --release --manifest-path tools/decoder-eval/Cargo.toml --bin semantics move

# dir: scans seek to ELF headers: torch 2.8.0's libtorch_cuda.so and venv (VENV=0 skips it).
bench-seek:
    bash ci/bench-seek.sh

# The fatbin reader against NVIDIA's cuobjdump on real PyPI wheels (`--fixtures`: on every
# fixture binary under testdata/ and ../shared/fixtures/, as CI runs it).
fatbin-oracle *args:
    bash ci/fatbin-oracle.sh {{args}}

# GL014's reading of a bundled ptxas against `ptxas --version` on real nvidia-cuda-nvcc-cu12
# wheels from PyPI (default 12.4.131 and 12.8.93).
ptxas-banner *versions:
    bash ci/ptxas-banner.sh {{versions}}

# Debian bookworm's own CUDA 11.8 (debootstrap, root, ~5 GB): the inventory figures in README.
debian-cuda-root:
    bash ci/debian-cuda-root.sh

# What NVIDIA / PyPI published beyond our matrix rows.
freshness:
    python3 ci/freshness.py

# Every compiler wheel on PyPI (matrices/compiler_wheels.toml), then the cuda_arch and
# ptx_isa rows measured from all of them (wheels cached outside the repository).
measure-compilers cache="../cache-wheels":
    python3 ci/compiler-wheels.py
    python3 ci/nvcc-arch-lists.py --from matrices/compiler_wheels.toml --cache {{cache}}
    python3 ci/nvcc-ptx-isa.py --from matrices/compiler_wheels.toml --cache {{cache}}

# README's measured/cited/inferred/unknown table from matrices/.
knowledge-counts:
    python3 ci/knowledge-counts.py

# Matrix rows measured from real artifacts (wheels downloaded from PyPI).
measure-torch-arch *versions:
    cargo build --release --example fatbin_list
    python3 ci/torch-arch-lists.py {{versions}}

measure-nvcc:
    python3 ci/nvcc-arch-lists.py
    python3 ci/nvcc-ptx-isa.py

# CUDA 11.3/11.4/11.6 arch rows from their NVRTC (no nvcc of them on PyPI); 11.7/11.8 check it.
measure-nvrtc:
    python3 ci/nvrtc-arch-lists.py 11.3=cumm-cu113==0.5.3 11.4=cumm-cu114==0.8.2 11.6=cumm-cu116==0.5.3 11.7=nvidia-cuda-nvrtc-cu11==11.7.99 11.8=nvidia-cuda-nvrtc-cu11==11.8.89

measure-cuda-components:
    python3 ci/cuda-components.py

# gpu_pci.toml from NVIDIA's open-gpu-kernel-modules README at every release tag (a clone).
gpu-pci-ids repo:
    python3 ci/open-gpu-pci-ids.py {{repo}} > matrices/gpu_pci.toml

# torch pinned by other packages (vllm, xformers, …), from their wheels' metadata on PyPI.
measure-torch-dependents *args:
    python3 ci/torch-dependents.py {{args}}

# torch.toml [[build_script]] rows: TORCH_CUDA_ARCH_LIST of each release's build script
# (a clone of pytorch/builder for 1.10-2.5; stored main-branch snapshots for 2.6-2.9).
torch-build-arch builder_git:
    python3 ci/torch-build-arch-lists.py --builder-git {{builder_git}} --snapshots ci/torch-build-snapshots.txt

# torch_companions.toml pins of torchvision / torchaudio releases, from their wheels' metadata.
torch-companion-pins *specs:
    python3 ci/torch-companion-pins.py {{specs}}

# ngc_pytorch.toml 23.01-25.12 rows: PyTorch from Triton's compatibility.md (a clone of
# triton-inference-server/server), CUDA from the image ENV dumps the script names.
ngc-pytorch-rows triton_git:
    python3 ci/ngc-pytorch-rows.py --triton-git {{triton_git}}

# cuda-images.toml [[cuda_image_tag]] rows from NVIDIA's doc/supported-tags.md (a copy of
# gitlab.com/nvidia/container-images/cuda at `commit`); add --check to compare.
cuda-image-tags supported_tags commit *args:
    python3 ci/cuda-image-tags.py {{supported_tags}} {{commit}} {{args}}

# Small skeletons of real CUDA runtimes (the cudart version fixtures in testdata/cudart/).
cudart-skeletons *args:
    python3 testdata/cudart/make-skeleton.py {{args}}

# Real-GPU checks (run on a GPU machine).
device-verdicts:
    bash ci/device-verdicts.sh

device-host-check:
    bash ci/device-host-check.sh

# The image-rule case trees in testdata/rules/image/cases/ (from real ELFs).
image-rule-cases:
    bash testdata/rules/image/make-cases.sh

# The example image in testdata/images/ (reproducible).
example-image:
    bash testdata/images/make-example-image.sh

# A real torch install judged end to end (downloads torch from PyPI).
torch-wheel-verdict:
    bash ci/torch-wheel-verdict.sh

# Issue 32: every cited artifact's sha256 against PyPI, and a rotating sample of measured rows
# re-derived by the scripts that wrote them (ci/test.sh runs this; `--all` re-derives every
# row, as .github/workflows/recheck.yml does weekly).
verify-citations *args:
    python3 ci/verify-citations.py {{args}}

# README's rule table against `gpulint rules`.
readme-figures:
    cargo build
    python3 ci/readme-figures.py target/debug/gpulint

# Issue 28: the CUDA/cuDNN gpulint's inventory says real third-party wheels need, and which
# evidence decided it (downloads ~4 GB of wheels from PyPI into ~/.cache/gpulint/pypi-survey).
pypi-cuda-survey *args:
    cargo build
    python3 ci/pypi-cuda-survey.py {{args}}
