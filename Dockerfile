# The image a CI job or a cluster node runs: `docker run --rm -v "$PWD:/work" medgate run ...`.
#
# CPU torch by default. For GPUs, build on a CUDA runtime base with the matching torch wheels:
#   docker build -t medgate:cuda \
#     --build-arg BASE_IMAGE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04 \
#     --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 .
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/venv/bin:$PATH

# python:*-slim has Python; a CUDA base has none, so it gets the distribution's (3.11 or newer).
# A virtual environment keeps pip away from the system packages either way. (apt versions are
# not pinned: they differ per base image.)
# hadolint ignore=DL3008
RUN if ! command -v python3 >/dev/null 2>&1; then \
        apt-get update \
        && apt-get install -y --no-install-recommends python3 python3-venv \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && python3 -m venv /opt/venv

# torch first and pinned (as in pyproject.toml and the Makefile), from the index that decides
# CPU or CUDA; this layer is the big one and stays cached while the project changes.
RUN pip install --index-url "${TORCH_INDEX_URL}" torch==2.14.1 torchvision==0.29.1

# The source tree stays at /opt/medgate and is installed editable: gate/config.py finds conf/
# and agents/ next to the gate package, exactly as in a checkout, so the image runs the same
# layout the tests run (a plain wheel would need them copied into gate/_bundled by hand).
WORKDIR /opt/medgate
COPY pyproject.toml README.md ./
COPY gate/ gate/
COPY checks/ checks/
COPY conf/ conf/
COPY agents/ agents/
RUN pip install -e . \
    && python -m compileall -q gate checks agents

# Runs are written to the working directory (mlflow.db, .medgate/, outputs/): mount one there.
RUN useradd --create-home --uid 10001 --user-group medgate \
    && mkdir -p /work \
    && chown medgate:medgate /work
# The user medgate, by number: Kubernetes' runAsNonRoot can only verify a numeric user.
USER 10001:10001
WORKDIR /work

ENTRYPOINT ["medgate"]
CMD ["--help"]
