# A SageMaker training container for ctrain (bring your own container; docs/launch.md#container).
#
#   docker build -t ctrain .
#   docker run --rm -v /path/to/opt-ml:/opt/ml ctrain train        # what SageMaker runs on each host
#
# SageMaker starts the container with the argument `train`: scripts/train, on PATH as
# /usr/local/bin/train, execs `ctrain launch` (root /opt/ml, checkpoints /opt/ml/checkpoints).
# One stage: scripts/install-deps.sh installs the build and the run-time libraries together
# (oneDNN, gRPC, protobuf, zstd, Open MPI), so the binary finds every shared library it was
# linked with.
FROM debian:12

ENV DEBIAN_FRONTEND=noninteractive \
    LANG=C.UTF-8
WORKDIR /src/ctrain

# Dependencies first: this layer is cached until the script changes.
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends ca-certificates && \
    INSTALL_DEPS_NO_PIP=1 bash scripts/install-deps.sh && rm -rf /var/lib/apt/lists/*

COPY . .
# Portable code (no -march=native: the image runs on other CPUs than the build host's),
# no tests or benchmarks in the image.
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTRAIN_NATIVE=OFF \
          -DCTRAIN_BUILD_TESTS=OFF -DCTRAIN_BUILD_BENCH=OFF && \
    cmake --build build --target ctrain -j"$(nproc)" && \
    install -m 0755 build/ctrain /usr/local/bin/ctrain && \
    install -m 0755 scripts/train /usr/local/bin/train && \
    rm -rf build

# Multi-host mpirun reaches the other hosts through ssh, as in SageMaker's own framework
# containers: every host runs this image's sshd (scripts/train makes `ctrain launch --sshd` start it
# on multi-host MPI jobs) and trusts the image's own key pair, which every host of the job shares.
# The key gives root on any container of this image that runs sshd: keep training jobs in their
# own network (SageMaker's job VPC) and never publish port 22.
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends openssh-server openssh-client && \
    rm -rf /var/lib/apt/lists/* && mkdir -p /run/sshd /root/.ssh && chmod 700 /root/.ssh && \
    ssh-keygen -q -t ed25519 -N '' -f /root/.ssh/id_ed25519 && \
    cp /root/.ssh/id_ed25519.pub /root/.ssh/authorized_keys && \
    printf 'Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n' > /root/.ssh/config && \
    chmod 600 /root/.ssh/authorized_keys /root/.ssh/config

# Open MPI refuses to run as root without these (SageMaker runs the container as root).
ENV OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
WORKDIR /opt/ml
# SageMaker passes `train` as the command; anything else runs as given (e.g. `ctrain --help`).
CMD ["train"]
