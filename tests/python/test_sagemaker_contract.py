"""The /opt/ml contract as the SageMaker platform's own code writes and reads it, against ctrain.

Trees are written by the SageMaker Python SDK (2.257.7): hyperparameters by
`EstimatorBase._json_encode_hyperparameters` (with `Framework._distribution_configuration` for a
distribution, `HyperparameterTuner._prepare_static_hyperparameters` for a tuning job), and the
config files by local mode's `_SageMakerContainer.write_config_files` (sagemaker/local/image.py,
called without Docker: the object is made without its __init__, which only checks for
docker-compose; write_config_files reads container_root, hosts and instance_type). Local mode
writes no instance groups: heterogeneous trees follow the documented resourceconfig.json schema
(current_group_name, instance_groups) with a channel given to one group (InstanceGroupNames).

Every tree is read back by the SageMaker training toolkit (sagemaker-training 5.1.4:
`sagemaker_training.environment.Environment()`, in a subprocess with SAGEMAKER_BASE_DIR at the
host's tree, which the module reads when imported) and by `ctrain launch --print-environment`;
the two views must agree: hosts, current host, groups, channels, hyperparameters, CPUs.
Distributions ctrain does not run are refused by name. The parameter-server distribution and a
TF_CONFIG cluster launch on loopback too. The 1-host and 3-host homogeneous trees,
and 2 hosts x 2 processes per host, are also launched (one `ctrain launch --sm-root` per host, a
few seconds).

Test-only dependencies: `sagemaker<3` and `sagemaker-training` (scripts/install-deps.sh).
The CLI: $CTRAIN_CLI when set, else the installed package's."""

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

estimator = pytest.importorskip("sagemaker.estimator", reason="the SageMaker Python SDK is not installed")
pytest.importorskip("sagemaker_training", reason="the SageMaker training toolkit is not installed")
from sagemaker import model as sagemaker_model  # noqa: E402
from sagemaker.local import image as local_image  # noqa: E402
from sagemaker.tuner import CategoricalParameter, ContinuousParameter, HyperparameterTuner  # noqa: E402

USER_HPS = {"epochs": 1, "batch_size": 64, "optimizer": "adam", "learning_rate": 0.001, "deep_layers": [16, 16],
            "embedding_size": 4, "seed": 3, "intra_op_parallelism_threads": 1, "progress": "none"}
TYPE = "ml.c5.xlarge"


@pytest.fixture(scope="module")
def data(ctrain_cli, tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    tr = d / "tr.libsvm"
    subprocess.run([ctrain_cli, "synth", "--rows", "600", "--format", "libsvm", "-o", str(tr)], check=True,
                   capture_output=True, timeout=60)
    return tr


class _Framework(estimator.Framework):
    """A concrete Framework (its one abstract method defined) to call the SDK's own methods on."""

    def create_model(self, **kwargs):
        raise NotImplementedError


def sdk_hyperparameters(user, distribution=None):
    """What a framework estimator sends: the user's values and the distribution's keys, JSON-encoded."""
    hps = dict(user)
    if distribution:
        framework = object.__new__(_Framework)  # made without __init__: only its LAUNCH_* / MPI_* names are read
        hps.update(estimator.Framework._distribution_configuration(framework, distribution))
    return estimator.EstimatorBase._json_encode_hyperparameters(hps)


def local_mode_trees(root, hosts, hyperparameters, channels, train_file):
    """Local mode's config files for every host (its own code), and each channel's data."""
    container = object.__new__(local_image._SageMakerContainer)
    container.container_root, container.hosts, container.instance_type = str(root), hosts, TYPE
    for host in hosts:
        local_image._create_config_file_directories(str(root), host)
        container.write_config_files(host, hyperparameters, [{"ChannelName": c} for c in channels])
        for c in channels:
            (root / host / "input" / "data" / c).mkdir(parents=True)
            os.link(train_file, root / host / "input" / "data" / c / train_file.name)
    return {h: root / h for h in hosts}


def run_toolkit(host_root, script):
    """Runs `script` (which writes one "TOOLKIT <json>" line) under the training toolkit's view of host_root."""
    env = dict(os.environ, SAGEMAKER_BASE_DIR=str(host_root), AWS_DEFAULT_REGION="us-east-1",
               SAGEMAKER_SUPPRESS_V2_WARNING="1")
    p = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads([line for line in p.stdout.splitlines() if line.startswith("TOOLKIT ")][-1][len("TOOLKIT "):])


def toolkit_view(host_root):
    script = (
        "import json, sys\n"
        "from sagemaker_training import environment\n"
        "env = environment.Environment()\n"
        "sys.stdout.write('\\nTOOLKIT ' + json.dumps({'hosts': env.hosts, 'current_host': env.current_host,"
        " 'current_instance_group': env.current_instance_group, 'current_instance_type': env.current_instance_type,"
        " 'instance_groups': env.instance_groups, 'current_instance_group_hosts': env.current_instance_group_hosts,"
        " 'is_hetero': env.is_hetero, 'channel_input_dirs': env.channel_input_dirs,"
        " 'hyperparameters': env.hyperparameters, 'all_hyperparameters': environment.read_hyperparameters(),"
        " 'additional_framework_parameters': env.additional_framework_parameters, 'num_cpus': env.num_cpus}) + '\\n')\n"
    )
    return run_toolkit(host_root, script)


def ctrain_view(cli, host_root, *extra):
    p = subprocess.run([cli, "launch", "--sm-root", str(host_root), "--print-environment", *extra],
                       capture_output=True, text=True, timeout=60)
    return p


def assert_same_view(cli, host_root, *extra):
    """ctrain's view of one host's tree equals the toolkit's; returns ctrain's."""
    tk = toolkit_view(host_root)
    p = ctrain_view(cli, host_root, *extra)
    assert p.returncode == 0, p.stderr
    ours = json.loads(p.stdout)
    assert not (host_root / "output" / "failure").exists()  # --print-environment writes nothing
    assert ours["hosts"] == tk["hosts"]
    assert ours["current_host"] == tk["current_host"]
    assert ours["current_group_name"] == tk["current_instance_group"]
    assert ours["current_instance_type"] == tk["current_instance_type"]
    assert ours["is_hetero"] == tk["is_hetero"]
    groups = [g["instance_group_name"] for g in ours["instance_groups"]]
    if tk["instance_groups"]:  # resourceconfig.json lists the groups
        assert groups == tk["instance_groups"]
        mine = [g for g in ours["instance_groups"] if g["instance_group_name"] == ours["current_group_name"]]
        assert mine[0]["hosts"] == tk["current_instance_group_hosts"]
    else:  # none listed: the toolkit has none, ctrain one group of every host under the toolkit's name
        assert ours["instance_groups"] == [
            {"instance_group_name": "homogeneousCluster", "instance_type": tk["current_instance_type"],
             "hosts": tk["hosts"]}]
    assert {name: c["dir"] for name, c in ours["channels"].items()} == tk["channel_input_dirs"]
    assert ours["hyperparameters"] == tk["all_hyperparameters"]
    assert ours["user_hyperparameters"] == tk["hyperparameters"]
    assert set(ours["platform_hyperparameters"]) == set(tk["all_hyperparameters"]) - set(tk["hyperparameters"])
    assert ours["num_cpus"] == tk["num_cpus"]
    return ours, tk


@pytest.mark.parametrize("count", [1, 3])
def test_homogeneous_local_mode_trees(ctrain_cli, data, tmp_path, count):
    hosts = [f"algo-{i + 1}" for i in range(count)]
    roots = local_mode_trees(tmp_path, hosts, sdk_hyperparameters(USER_HPS), ["train"], data)
    for i, h in enumerate(hosts):
        ours, tk = assert_same_view(ctrain_cli, roots[h])
        assert ours["user_hyperparameters"] == USER_HPS  # the SDK's encoding round-trips
        assert ours["role"] == ("trainer" if i == 0 else "mpi-peer")
        assert ours["train_hosts"] == hosts
        assert ours["trainer_inputs"] == (["--train", str(roots[h] / "input/data/train" / data.name)] if i == 0 else [])


def test_mpi_distribution_processes_per_host_and_custom_options(ctrain_cli, data, tmp_path):
    hosts = ["algo-1", "algo-2", "algo-3"]
    hps = sdk_hyperparameters(USER_HPS, {"mpi": {"enabled": True}})
    assert hps["sagemaker_mpi_enabled"] == "true" and hps["sagemaker_mpi_custom_mpi_options"] == '""'
    roots = local_mode_trees(tmp_path / "one", hosts, hps, ["train"], data)
    ours, tk = assert_same_view(ctrain_cli, roots["algo-1"])
    assert tk["additional_framework_parameters"]["sagemaker_mpi_enabled"] is True
    assert sorted(ours["platform_hyperparameters"]) == ["sagemaker_mpi_custom_mpi_options", "sagemaker_mpi_enabled"]
    assert (ours["processes_per_host"], ours["world_size"], ours["custom_mpi_options"]) == (1, 3, [])

    user = {k: v for k, v in USER_HPS.items() if k != "intra_op_parallelism_threads"}
    options = "--display-map  -x CTRAIN_SEEN=1"
    hps = sdk_hyperparameters(user, {"mpi": {"enabled": True, "processes_per_host": 2, "custom_mpi_options": options}})
    assert hps["sagemaker_mpi_num_of_processes_per_host"] == "2"
    roots = local_mode_trees(tmp_path / "two", hosts, hps, ["train"], data)
    for h in hosts:
        ours, tk = assert_same_view(ctrain_cli, roots[h])
        framework = tk["additional_framework_parameters"]
        assert framework["sagemaker_mpi_num_of_processes_per_host"] == ours["processes_per_host"] == 2
        assert framework["sagemaker_mpi_custom_mpi_options"] == options
        assert ours["custom_mpi_options"] == options.split()  # the toolkit's MPI runner splits them so
        assert ours["world_size"] == 6
        assert ours["rank_intra_op_threads"] == max(1, tk["num_cpus"] // 2)

    # A Pipe channel cannot be shared by the ranks of a host: refused by name.
    pipe = local_mode_trees(tmp_path / "pipe", ["algo-1"], hps, ["train"], data)
    config = pipe["algo-1"] / "input" / "config" / "inputdataconfig.json"
    config.write_text(json.dumps({"train": {"TrainingInputMode": "Pipe"}}))
    p = ctrain_view(ctrain_cli, pipe["algo-1"])
    assert p.returncode == 1 and "distribution mpi processes_per_host 2: " in p.stderr, p.stderr
    assert ('channel "train" is in Pipe mode, and SageMaker gives each host one FIFO per channel and epoch, which 2 '
            "ranks cannot share: give one Pipe channel per local rank (train_0 .. train_1" in p.stderr), p.stderr

    hps = sdk_hyperparameters(USER_HPS, {"mpi": {"enabled": True}})
    hps["sagemaker_mpi_num_of_processes_per_host"] = "0"  # (the SDK leaves a 0 out; a plain Estimator sends it)
    roots = local_mode_trees(tmp_path / "zero", ["algo-1"], hps, ["train"], data)
    p = subprocess.run([ctrain_cli, "launch", "--sm-root", str(roots["algo-1"])], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 1
    assert ('"sagemaker_mpi_num_of_processes_per_host" (value 0): distribution mpi processes_per_host must be a '
            "whole number in [1, 4096]") in (roots["algo-1"] / "output" / "failure").read_text()


def test_tuning_job_hyperparameters(ctrain_cli, data, tmp_path):
    """A tuning job's training job: the SDK's static hyperparameters (the estimator's, the tuned
    ones left out, the estimator class added), the tuned values as the service sends them (text),
    and _tuning_objective_metric."""

    class Estimator:  # what _prepare_static_hyperparameters reads: hyperparameters()
        def hyperparameters(self):
            return sdk_hyperparameters(USER_HPS)

    ranges = {"learning_rate": ContinuousParameter(0.0001, 0.01), "optimizer": CategoricalParameter(["adam", "adagrad"])}
    static = HyperparameterTuner._prepare_static_hyperparameters(Estimator(), ranges, include_cls_metadata=True)
    assert "learning_rate" not in static and static["sagemaker_estimator_class_name"] == '"Estimator"'
    hps = dict(static, learning_rate="0.0023", optimizer="adagrad", _tuning_objective_metric="validation:auc")
    roots = local_mode_trees(tmp_path, ["algo-1"], hps, ["train"], data)
    ours, tk = assert_same_view(ctrain_cli, roots["algo-1"])
    assert ours["training_options"]["learning_rate"] == 0.0023 and ours["training_options"]["optimizer"] == "adagrad"
    assert sorted(ours["platform_hyperparameters"]) == [
        "_tuning_objective_metric", "sagemaker_estimator_class_name", "sagemaker_estimator_module"]
    # And it trains with the tuned values.
    p = subprocess.run([ctrain_cli, "launch", "--sm-root", str(roots["algo-1"]), "--monitor-interval-ms", "500"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "--learning-rate=0.0023" in p.stderr and "--optimizer=adagrad" in p.stderr, p.stderr
    assert (roots["algo-1"] / "model" / "checkpoint").is_file()


def hetero_trees(root, train_file, hps):
    """2 data hosts + 2 trainer hosts, the documented resourceconfig.json; the train channel is
    given to the data group only (trainer hosts do not see it), validation to the trainers."""
    hosts = ["algo-1", "algo-2", "algo-3", "algo-4"]
    groups = [{"instance_group_name": "data", "instance_type": "ml.c5.xlarge", "hosts": ["algo-1", "algo-2"]},
              {"instance_group_name": "train", "instance_type": "ml.g5.xlarge", "hosts": ["algo-3", "algo-4"]}]
    channel = {"TrainingInputMode": "File", "S3DistributionType": "FullyReplicated", "RecordWrapperType": "None"}
    roots = {}
    for h in hosts:
        group = "data" if h in groups[0]["hosts"] else "train"
        r = root / h
        (r / "input" / "config").mkdir(parents=True)
        (r / "input" / "config" / "resourceconfig.json").write_text(json.dumps({
            "current_host": h, "current_instance_type": groups[0 if group == "data" else 1]["instance_type"],
            "current_group_name": group, "hosts": hosts, "instance_groups": groups, "network_interface_name": "eth0"}))
        (r / "input" / "config" / "hyperparameters.json").write_text(json.dumps(hps))
        name = "train" if group == "data" else "validation"
        (r / "input" / "config" / "inputdataconfig.json").write_text(
            json.dumps({name: dict(channel, InstanceGroupNames=[group])}))
        (r / "input" / "data" / name).mkdir(parents=True)
        os.link(train_file, r / "input" / "data" / name / train_file.name)
        roots[h] = r
    return roots


def test_heterogeneous_trees(ctrain_cli, data, tmp_path):
    hps = sdk_hyperparameters(dict(USER_HPS, data_group="data"))
    roots = hetero_trees(tmp_path, data, hps)
    # The hosts' VPC addresses (SageMaker's DNS resolves algo-N; here they are given).
    addresses = [f"--host-address=algo-{i}=10.0.0.{i}" for i in range(1, 5)]
    roles = {}
    for h, r in roots.items():
        ours, tk = assert_same_view(ctrain_cli, r, *addresses)
        assert tk["is_hetero"] is True
        roles[h] = ours["role"]
        assert ours["user_hyperparameters"]["data_group"] == "data"
        assert ours["dispatcher"] == "10.0.0.1:5050"
        assert ours["bind_address"] == (f"10.0.0.{h[-1]}" if ours["role"] == "data" else "")
    assert roles == {"algo-1": "data", "algo-2": "data", "algo-3": "trainer", "algo-4": "mpi-peer"}
    trainer = json.loads(ctrain_view(ctrain_cli, roots["algo-3"], *addresses).stdout)
    # The train channel is the data hosts' (absent here): its path, for the dispatcher (case B51).
    assert trainer["trainer_inputs"] == ["--train", str(roots["algo-3"] / "input/data/train"),
                                         "--valid", str(roots["algo-3"] / "input/data/validation" / data.name)]
    assert trainer["train_hosts"] == ["algo-3", "algo-4"]
    assert json.loads(ctrain_view(ctrain_cli, roots["algo-1"], *addresses).stdout)["runs_dispatcher"] is True
    # Without an address that resolves, a data host cannot say where to listen: named.
    p = ctrain_view(ctrain_cli, roots["algo-2"])
    assert p.returncode == 1 and 'cannot resolve host "algo-2" to an address to listen on' in p.stderr, p.stderr


def toolkit_env_vars(host_root):
    """What the training toolkit tells a user's script (Environment().to_env_vars(), as entry_point.run gives it)."""
    script = ("import json, sys\nfrom sagemaker_training import environment\n"
              "sys.stdout.write('\\nTOOLKIT ' + json.dumps(environment.Environment().to_env_vars()) + '\\n')\n")
    return run_toolkit(host_root, script)


def assert_script_env_is_the_toolkits(cli, host_root, *extra):
    """A user script's variables under ctrain launch equal the toolkit's, value for value; returns ctrain's view."""
    p = ctrain_view(cli, host_root, *extra)
    assert p.returncode == 0, p.stderr
    ours = json.loads(p.stdout)
    env = ours["entry_point"]["env"]
    tk = toolkit_env_vars(host_root)
    sm = {k: v for k, v in env.items() if k.startswith("SM_")}
    assert len(sm) >= 25, sorted(sm)
    for k, v in sm.items():
        assert k in tk, k
        assert tk[k] == v, (k, v, tk[k])
    for k in tk:  # every hyperparameter and channel variable the toolkit gives, ctrain gives too
        if k.startswith(("SM_HP_", "SM_CHANNEL_")):
            assert k in sm, k
    # The script's command line ends with the hyperparameters as the toolkit's to_cmd_args() gives them.
    user_args = json.loads(tk["SM_USER_ARGS"])
    assert ours["entry_point"]["argv"][-len(user_args):] == user_args
    return ours


def test_entry_point_is_told_what_the_training_toolkit_tells_a_script(ctrain_cli, data, tmp_path):
    """sagemaker_program and sagemaker_submit_directory (the SDK's own names, JSON-encoded by the SDK) make
    the trainer role run the user's script; its SM_* variables and arguments are the toolkit's."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    user = {"learning_rate": 0.01, "layers": [64, 32], "optimizer": "adam", "use_bn": True, "x": 2.0,
            "names": ["a", "b"], "embedding_size": 8}
    hps = dict(user, **{sagemaker_model.SCRIPT_PARAM_NAME: "train.py", sagemaker_model.DIR_PARAM_NAME: str(code)})
    # Homogeneous, 1 and 2 hosts (local mode's own tree).
    for count in (1, 2):
        hosts = [f"algo-{i + 1}" for i in range(count)]
        distribution = {"mpi": {"enabled": True}} if count > 1 else None
        roots = local_mode_trees(tmp_path / f"h{count}", hosts, sdk_hyperparameters(hps, distribution), ["train"], data)
        ours = assert_script_env_is_the_toolkits(ctrain_cli, roots["algo-1"])
        assert ours["entry_point"]["argv"][1] == str(code / "train.py") and ours["entry_point"]["dir"] == str(code)
        assert "CTRAIN_DATA_SERVICE" not in ours["entry_point"]["env"]
        assert ours["entry_point"]["env"]["CTRAIN_TRAINING_JOB_NAME"]
        if count > 1:  # the second host serves mpirun; the script runs on the first under it
            assert json.loads(ctrain_view(ctrain_cli, roots["algo-2"]).stdout)["entry_point"] == {}
    # Heterogeneous: the trainer host's script is told the data service.
    roots = hetero_trees(tmp_path / "hetero", data, sdk_hyperparameters(dict(hps, data_group="data")))
    addresses = [f"--host-address=algo-{i}=10.0.0.{i}" for i in range(1, 5)]
    ours = assert_script_env_is_the_toolkits(ctrain_cli, roots["algo-3"], *addresses)
    env = ours["entry_point"]["env"]
    assert env["CTRAIN_DATA_SERVICE"] == "10.0.0.1:5050"
    assert env["CTRAIN_DATA_SERVICE_TRAIN"] == str(roots["algo-3"] / "input" / "data" / "train")
    assert env["SM_IS_HETERO"] == "true" and env["SM_CURRENT_INSTANCE_GROUP"] == "train"
    # The data hosts name no script channels: they serve whatever files the script's jobs read.
    assert json.loads(ctrain_view(ctrain_cli, roots["algo-1"], *addresses).stdout)["role"] == "data"
    # A script does not take ctrain's parameter-server layout.
    ps = local_mode_trees(tmp_path / "ps", ["algo-1"], sdk_hyperparameters(hps, {"parameter_server": {"enabled": True}}),
                          ["train"], data)
    p = ctrain_view(ctrain_cli, ps["algo-1"])
    assert p.returncode == 1 and "a user entry point with distribution parameter_server" in p.stderr, p.stderr


FAKE_SSH = """#!/bin/sh
# ssh HOST COMMAND...: runs COMMAND on this machine (every "host" is a loopback address of it),
# with the host's own TMPDIR as a separate machine has (Open MPI's session directories).
host=$1
shift
mkdir -p "$(dirname "$0")/tmp-$host"
exec env TMPDIR="$(dirname "$0")/tmp-$host" /bin/sh -c "$*"
"""


def launch_hosts(cli, roots, hosts, tmp_path, extra=(), envs=None, ssh_args=None, timeout_s=300):
    """One `ctrain launch --sm-root` per host at once, host algo-N at 127.0.0.N. The first host's
    mpirun starts the other hosts' Open MPI daemons through ssh, as on SageMaker; here its ssh is
    a script that runs the command on this machine (--mca plm_rsh_agent), and the other hosts'
    launchers wait for that daemon to come and go (--mpi-host-wait-s)."""
    ssh = tmp_path / "fake_ssh"
    ssh.write_text(FAKE_SSH)
    ssh.chmod(0o755)
    args = [f"--host-address={h}=127.0.0.{i + 1}" for i, h in enumerate(hosts)]
    if ssh_args is None:
        args += ["--mpirun-arg=--oversubscribe", "--mpirun-arg=--mca", "--mpirun-arg=plm_rsh_agent", f"--mpirun-arg={ssh}"]
    else:  # the real ssh and each host's real sshd
        args += ["--mpirun-arg=--oversubscribe", *ssh_args]
    extra = {h: list(extra(h)) if callable(extra) else list(extra) for h in hosts}
    procs = {h: subprocess.Popen([cli, "launch", "--sm-root", str(roots[h]), "--mpi-host-wait-s", "120",
                                  "--monitor-interval-ms", "500", *args, *extra[h]],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 env=dict(os.environ, **(envs or {}).get(h, {}))) for h in hosts}
    out, exited = {}, {}

    def wait(h, p):  # all hosts at once: when each one exits is measured (bench/sagemaker_exit_bench.sh)
        try:
            out[h] = (p.communicate(timeout=timeout_s)[0], p.returncode)
            exited[h] = time.time()
        except subprocess.TimeoutExpired:
            p.kill()
            out[h] = (p.communicate()[0] + f"\n[killed: no exit within {timeout_s} s]", None)

    waiters = [threading.Thread(target=wait, args=(h, p)) for h, p in procs.items()]
    for t in waiters:
        t.start()
    for t in waiters:
        t.join()
    record_exit_times(roots, exited)
    return out


def record_exit_times(roots, exited):
    """With CTRAIN_EXIT_TIMES=FILE (bench/sagemaker_exit_bench.sh), appends the test's hosts' exit
    times after the model was written (the checkpoint's mtime: the end of the last step) as a JSON line."""
    path = os.environ.get("CTRAIN_EXIT_TIMES")
    if not path:
        return
    written = [(roots[h] / "model" / "checkpoint").stat().st_mtime for h in roots
               if (roots[h] / "model" / "checkpoint").is_file()]
    line = {"test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0],
            "after_model_s": {h: round(t - written[0], 3) for h, t in exited.items()} if written else None}
    with open(path, "a") as f:
        f.write(json.dumps(line) + "\n")


@pytest.mark.parametrize("count,per_host", [(1, 1), (3, 1), (2, 2)])  # a few seconds each: 600 rows
def test_homogeneous_trees_train_on_loopback(ctrain_cli, data, tmp_path, count, per_host):
    """The SDK's trees launched, one `ctrain launch` per host, each host its own 127.0.0.x; the
    distribution mpi with processes_per_host 2 and custom mpirun options runs 4 ranks on 2 hosts."""
    hosts = [f"algo-{i + 1}" for i in range(count)]
    distribution = {"mpi": {"enabled": True}} if count > 1 else None
    if per_host > 1:
        # The simulated hosts are one machine with one hostname: Open MPI's shared-memory transport would name
        # both hosts' segments alike in /dev/shm (vader_segment.<hostname>...), so the ranks talk TCP here.
        distribution["mpi"].update(processes_per_host=per_host, custom_mpi_options="--display-map --mca btl tcp,self")
    hps = sdk_hyperparameters(USER_HPS, distribution)
    roots = local_mode_trees(tmp_path, hosts, hps, ["train"], data)
    out = launch_hosts(ctrain_cli, roots, hosts, tmp_path)
    if count > 1 and "built without MPI" in out["algo-1"][0]:
        pytest.skip("this ctrain has no MPI")
    for h in hosts:
        log, rc = out[h]
        assert rc == 0, f"{h}:\n{log}"
        assert not (roots[h] / "output" / "failure").exists()
    assert (roots["algo-1"] / "model" / "checkpoint").is_file()
    for h in hosts[1:]:
        assert not any((roots[h] / "model").iterdir()), h  # the model is written on the first host only
        assert f"{h}: mpirun's daemon is here; waiting for it to end" in out[h][0], out[h][0]
    metrics = json.loads((roots["algo-1"] / "output" / "data" / "metrics.json").read_text())
    assert metrics["examples"] == 600 and metrics["epochs"] == 1
    if count > 1:
        log = out["algo-1"][0]
        ranks = count * per_host
        assert f"mpirun: {ranks} rank(s)" in log, log
        hostlist = ",".join(f"127.0.0.{i + 1}:{per_host}" for i in range(count))
        assert (f"--display-map --mca btl tcp,self -np {ranks} --host {hostlist} " in log if per_host > 1
                else f"--host {hostlist} " in log), log
        assert "mpirun --allow-run-as-root --bind-to none " in log, log  # one core per rank otherwise (np <= 2)
        if per_host > 1:
            assert "JOB MAP" in log, log  # mpirun ran with the custom option


def feed_pipe_channels(fifos, payloads):
    """What SageMaker does for a Pipe channel: it makes the FIFO <channel>_<epoch> and writes the
    channel's data into it once a reader opens it. Returns the writer threads."""
    def write(fifo, payload):
        fd = os.open(fifo, os.O_WRONLY)  # blocks until the trainer opens it
        try:
            os.write(fd, payload)
        finally:
            os.close(fd)
    threads = []
    for fifo, payload in zip(fifos, payloads):
        os.mkfifo(fifo)
        threads.append(threading.Thread(target=write, args=(fifo, payload), daemon=True))
        threads[-1].start()
    return threads


def test_mpi_pipe_channel_per_local_rank_on_loopback(ctrain_cli, data, tmp_path):
    """distribution mpi with processes_per_host 2 and Pipe mode: each local rank reads its own
    channel (train_0, train_1), as SageMaker's Pipe mode with several processes per host asks; the
    two ranks read two distinct halves of the data, every row once. (One host: mpirun gives every
    host the first host's command line, and on SageMaker every host's channels are at
    /opt/ml/input/data; the simulated hosts' trees are not at one path.)"""
    hps = sdk_hyperparameters(USER_HPS, {"mpi": {"enabled": True, "processes_per_host": 2,
                                                 "custom_mpi_options": "--mca btl tcp,self"}})
    roots = local_mode_trees(tmp_path, ["algo-1"], hps, [], data)
    root = roots["algo-1"]
    (root / "input" / "config" / "inputdataconfig.json").write_text(
        json.dumps({f"train_{k}": {"TrainingInputMode": "Pipe"} for k in range(2)}))
    ours, _ = assert_same_view(ctrain_cli, root)
    assert sorted(ours["channels"]) == ["train_0", "train_1"]
    rows = data.read_bytes().splitlines(keepends=True)
    assert len(rows) == 600
    data_dir = root / "input" / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    # channel train_k, epoch 0: rank k's half
    writers = feed_pipe_channels([data_dir / f"train_{k}_0" for k in range(2)], [b"".join(rows[k::2]) for k in range(2)])
    out = launch_hosts(ctrain_cli, roots, ["algo-1"], tmp_path)
    log, rc = out["algo-1"]
    if "built without MPI" in log:
        pytest.skip("this ctrain has no MPI")
    assert rc == 0, log
    for w in writers:
        w.join(timeout=30)
        assert not w.is_alive()  # each FIFO was opened and read to its end
    assert "mpirun: 2 rank(s)" in log, log
    assert "--train 'pipe:" + str(data_dir) + "/train_{local_rank}'" in log, log
    metrics = json.loads((root / "output" / "data" / "metrics.json").read_text())
    assert metrics["examples"] == 600 and metrics["epochs"] == 1  # 2 x 300, each row once
    assert (root / "model" / "checkpoint").is_file()
    assert not (root / "output" / "failure").exists()


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def check_exported_model(cli, model_dir, data, tmp_path):
    """The chief's model/ is one local checkpoint: `ctrain predict` reads it."""
    assert (model_dir / "checkpoint").is_file()
    out = tmp_path / "pred.txt"
    p = subprocess.run([cli, "predict", "--model-dir", str(model_dir), "--input", str(data), "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    probs = [float(x) for x in out.read_text().split()]
    assert len(probs) == 600 and all(0.0 < x < 1.0 for x in probs)


def test_parameter_server_distribution_trains_on_loopback(ctrain_cli, data, tmp_path):
    """distribution={"parameter_server": {"enabled": True}} on 2 hosts: every host runs a parameter
    server and a worker (SageMaker's layout), the first host's worker is the chief and writes model/;
    every process exits by itself once both workers are done."""
    hosts = ["algo-1", "algo-2"]
    hps = sdk_hyperparameters(dict(USER_HPS, ps_max_message_bytes=1 << 20), {"parameter_server": {"enabled": True}})
    assert hps["sagemaker_parameter_server_enabled"] == "true"
    roots = local_mode_trees(tmp_path, hosts, hps, ["train"], data)
    port = free_port()
    addresses = [f"--host-address={h}=127.0.0.{i + 1}" for i, h in enumerate(hosts)]
    for i, h in enumerate(hosts):
        ours, tk = assert_same_view(ctrain_cli, roots[h], *addresses, f"--ps-port={port}")
        assert tk["additional_framework_parameters"] == {"sagemaker_parameter_server_enabled": True}
        assert ours["role"] == "ps" and ours["ps_source"] == "resourceconfig.json"
        assert ours["parameter_servers"] == [f"127.0.0.1:{port}", f"127.0.0.2:{port}"]
        assert (ours["ps_shard"], ours["worker_index"], ours["num_workers"]) == (i, i, 2)
    out = launch_hosts(ctrain_cli, roots, hosts, tmp_path, extra=[f"--ps-port={port}"])
    for h in hosts:
        log, rc = out[h]
        assert rc == 0, f"{h}:\n{log}"
        assert not (roots[h] / "output" / "failure").exists()
        assert "every worker finished: stopping" in log, log
        assert " --max-message-bytes=1048576" in log and "--ps-max-message-bytes=1048576" in log, log
    assert "exported the model from the parameter servers to " in out["algo-1"][0]
    assert not any((roots["algo-2"] / "model").iterdir())  # the chief alone writes the model
    check_exported_model(ctrain_cli, roots["algo-1"] / "model", data, tmp_path)
    # Each worker trained on its half of the data.
    for h in hosts:
        metrics = json.loads((roots[h] / "output" / "data" / "metrics.json").read_text())
        assert metrics["ps"]["num_workers"] == 2 and metrics["ps"]["steps"] > 0


def test_heterogeneous_trees_train_on_loopback(ctrain_cli, data, tmp_path):
    """The heterogeneous trees (2 data hosts + 2 trainer hosts, the train channel on the data group
    only) launched, one `ctrain launch --sm-root` per host: the data hosts serve the train channel, the
    two trainers train on it over MPI, the first writes the model, and every host exits by itself."""
    hosts = ["algo-1", "algo-2", "algo-3", "algo-4"]
    roots = hetero_trees(tmp_path / "trees", data, sdk_hyperparameters(dict(USER_HPS, data_group="data")))
    for h in hosts[2:]:
        # The trainer reads no train channel (it has none, case B51): it names its path, which on SageMaker
        # is /opt/ml/input/data/train on every host, and the dispatcher expands it on its own host. Here each
        # host has its own root on one machine, so that path of a trainer's root leads to the data hosts' copy.
        assert not (roots[h] / "input" / "data" / "train").exists()
        (roots[h] / "input" / "data" / "train").symlink_to(roots["algo-1"] / "input" / "data" / "train")
    ports = [f"--dispatcher-port={free_port()}", f"--worker-port={free_port()}"]
    out = launch_hosts(ctrain_cli, roots, hosts, tmp_path, extra=ports, timeout_s=60)
    if "built without MPI" in out["algo-3"][0]:
        pytest.skip("this ctrain has no MPI")
    logs = "\n".join(f"--- {h} (exit {rc}):\n{log[-4000:]}" for h, (log, rc) in out.items())
    for h in hosts:
        assert out[h][1] == 0, logs
        assert not (roots[h] / "output" / "failure").exists(), h
    assert (roots["algo-3"] / "model" / "checkpoint").is_file()
    for h in ("algo-1", "algo-2", "algo-4"):  # the first trainer host alone writes the model
        assert not (roots[h] / "model").exists() or not any((roots[h] / "model").iterdir()), h
    metrics = json.loads((roots["algo-3"] / "output" / "data" / "metrics.json").read_text())
    assert metrics["examples"] == 600 and metrics["epochs"] == 1, metrics  # every row once, over both ranks
    # The data hosts served both trainers and exited once the job was done.
    assert "trainer 0 finished job" in out["algo-1"][0] and "trainer 1 finished job" in out["algo-1"][0], logs
    assert any(why in out["algo-2"][0] for why in ("every job has finished (--exit-when-idle)",
                                                    "the data service is shutting down")), logs


def test_tf_config_parameter_server_cluster_on_loopback(ctrain_cli, data, tmp_path):
    """A cluster described by TF_CONFIG (as Kubeflow's TFJob sets it): one process per task, a
    parameter server, the chief and a worker, each its own `ctrain launch` at its own address."""
    hosts = ["algo-1", "algo-2", "algo-3"]
    roots = local_mode_trees(tmp_path, hosts, sdk_hyperparameters(USER_HPS), ["train"], data)
    ports = [free_port() for _ in hosts]
    cluster = {"ps": [f"127.0.0.3:{ports[2]}"], "chief": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.2:{ports[1]}"]}
    tasks = {"algo-1": ("chief", 0), "algo-2": ("worker", 0), "algo-3": ("ps", 0)}
    envs = {h: {"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": t, "index": i}})}
            for h, (t, i) in tasks.items()}
    for h in hosts:
        p = subprocess.run([ctrain_cli, "launch", "--sm-root", str(roots[h]), "--print-environment"],
                           capture_output=True, text=True, timeout=60, env=dict(os.environ, **envs[h]))
        assert p.returncode == 0, p.stderr
        ours = json.loads(p.stdout)
        assert ours["ps_source"] == "TF_CONFIG" and ours["parameter_servers"] == cluster["ps"]
        assert (ours["ps_shard"], ours["worker_index"], ours["num_workers"]) == \
            {"algo-1": (-1, 0, 2), "algo-2": (-1, 1, 2), "algo-3": (0, -1, 2)}[h]
    out = launch_hosts(ctrain_cli, roots, hosts, tmp_path, envs=envs)
    for h in hosts:
        log, rc = out[h]
        assert rc == 0, f"{h}:\n{log}"
    assert "every worker finished: stopping" in out["algo-3"][0]
    check_exported_model(ctrain_cli, roots["algo-1"] / "model", data, tmp_path)
    # An evaluator task is refused by name.
    bad = dict(os.environ, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "evaluator", "index": 0}}))
    p = subprocess.run([ctrain_cli, "launch", "--sm-root", str(roots["algo-1"])], capture_output=True, text=True,
                       timeout=60, env=bad)
    assert p.returncode == 1 and 'TF_CONFIG: task type "evaluator" is not run by ctrain launch' in p.stderr, p.stderr


SSHD_CONFIG = """Port {port}
ListenAddress {address}
HostKey {dir}/hostkey
AuthorizedKeysFile {dir}/authorized_keys
PidFile {dir}/sshd-{host}.pid
StrictModes no
UsePAM no
PasswordAuthentication no
PermitRootLogin prohibit-password
SetEnv TMPDIR={dir}/tmp-{host}
"""


def test_mpi_hosts_reach_each_other_through_real_sshd(ctrain_cli, data, tmp_path):
    """`ctrain launch --sshd` (what scripts/train passes in the image) on 2 hosts: each host starts a real
    sshd, the first host waits for the other's, then mpirun reaches it through the real ssh client with a
    key pair, as in SageMaker's framework containers; each host stops its sshd when its part is over."""
    sshd = "/usr/sbin/sshd"
    if not os.access(sshd, os.X_OK) or os.geteuid() != 0:
        pytest.skip("needs root and openssh-server (scripts/install-deps.sh installs it)")
    made_run_dir = not os.path.isdir("/run/sshd")
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege-separation directory
    try:
        hosts = ["algo-1", "algo-2"]
        roots = local_mode_trees(tmp_path, hosts, sdk_hyperparameters(USER_HPS, {"mpi": {"enabled": True}}),
                                 ["train"], data)
        keys = tmp_path / "ssh"
        keys.mkdir()
        for name in ("hostkey", "userkey"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)], check=True)
        (keys / "authorized_keys").write_text((keys / "userkey.pub").read_text())
        port = free_port()
        for i, h in enumerate(hosts):
            (keys / f"tmp-{h}").mkdir()
            (keys / f"sshd-{h}.conf").write_text(
                SSHD_CONFIG.format(port=port, address=f"127.0.0.{i + 1}", dir=keys, host=h))
        ssh = (f"-p {port} -i {keys}/userkey -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
               "-o BatchMode=yes -o LogLevel=ERROR")
        ssh_args = ["--mpirun-arg=--mca", "--mpirun-arg=plm_rsh_agent", "--mpirun-arg=ssh",
                    "--mpirun-arg=--mca", "--mpirun-arg=plm_rsh_args", f"--mpirun-arg={ssh}",
                    "--mpirun-arg=--mca", "--mpirun-arg=btl", "--mpirun-arg=tcp,self"]
        out = launch_hosts(ctrain_cli, roots, hosts, tmp_path, ssh_args=ssh_args,
                           extra=lambda h: ["--sshd", sshd, "--sshd-arg=-f", f"--sshd-arg={keys}/sshd-{h}.conf",
                                            f"--ssh-port={port}"])
        if "built without MPI" in out["algo-1"][0]:
            pytest.skip("this ctrain has no MPI")
        for h in hosts:
            log, rc = out[h]
            assert rc == 0, f"{h}:\n{log}"
            assert f"{h}: sshd: {sshd} -D -e -f" in log, log
            assert not (roots[h] / "output" / "failure").exists()
        log = out["algo-1"][0]
        assert f"algo-1: waiting for the sshd of algo-2 at 127.0.0.2:{port}" in log, log
        assert "mpirun: 2 rank(s)" in log, log
        assert "Accepted publickey for root" in out["algo-2"][0]  # the real sshd let mpirun in
        assert "algo-2: mpirun's daemon is here; waiting for it to end" in out["algo-2"][0]
        assert (roots["algo-1"] / "model" / "checkpoint").is_file()
        for h in hosts:  # no sshd left behind
            pid_file = keys / f"sshd-{h}.pid"
            if pid_file.exists():
                assert not os.path.exists(f"/proc/{pid_file.read_text().strip()}"), h
    finally:
        if made_run_dir:
            os.rmdir("/run/sshd")
