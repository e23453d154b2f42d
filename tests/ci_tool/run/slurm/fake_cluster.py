"""A real Slurm cluster on this machine, for tests and benches: Debian's slurmctld, slurmd and munge, several
fake nodes (one slurmd each, on free ports) with fake GPUs (character devices), in a fresh folder.

    missing_slurm()                      None when the commands are there, else which are missing and
                                         what installs them (nothing here installs packages: .ci/run does)
    start_cluster(folder, partitions=...)  munged, slurmctld, one slurmd per node; returns once every node
                                         is idle and `srun` runs on all of them
    cluster.stop()                       every daemon stopped by the pid in its pid file

Each cluster has its own munge socket and key, its own ports and state folder, so it never meets another
cluster on the machine, and the environment it gives its clients holds no SLURM_* variable of an allocation
the tests may run in. Several slurmd daemons share one host by each taking `-N <node>`, its own port and its
own spool and pid file (`%n` in slurm.conf); the daemons run as root, munged as the munge user.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
COMMANDS = ("slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo", "srun", "munged", "munge")
READY_SECONDS = 60.0
STOP_SECONDS = 10.0


def missing_slurm() -> str | None:
    """None when every command a cluster needs is on PATH, else which are missing and what installs them."""
    missing = [command for command in COMMANDS if shutil.which(command) is None]
    if not missing:
        return None
    return (
        f"Slurm is not installed: no {', '.join(missing)} on PATH "
        f"(Debian's {' '.join(PACKAGES)}; .ci/run installs them)"
    )


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def client_environment(conf: Path, base: Mapping[str, str] = os.environ) -> dict[str, str]:
    """`base` without an allocation's SLURM_* variables, with SLURM_CONF naming this cluster."""
    return {**{k: v for k, v in base.items() if not k.startswith("SLURM_")}, "SLURM_CONF": str(conf)}


@dataclass
class FakeCluster:
    folder: Path
    conf: Path
    nodes: tuple[str, ...]
    pid_files: list[Path] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return client_environment(self.conf)

    def run(self, *command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(command), env=self.env, capture_output=True, text=True, check=check, timeout=60)

    def node_states(self) -> dict[str, str]:
        lines = self.run("sinfo", "-h", "-N", "-o", "%N %t").stdout.split("\n")
        return {name: state for name, state in (line.split() for line in lines if line.strip())}

    def set_node(self, node: str, state: str, reason: str = "ci-tool test") -> None:
        """`scontrol update` a node's state (DOWN, RESUME); a node already up (ReturnToService=2 brings a
        responding node back by itself) stays up."""
        result = self.run("scontrol", "update", f"NodeName={node}", f"State={state}", f"Reason={reason}", check=False)
        if result.returncode != 0 and not (
            state == "RESUME" and self.node_states().get(node) in ("idle", "mix", "alloc")
        ):
            raise RuntimeError(f"scontrol could not set {node} {state}: {result.stderr.strip()}")

    def stop(self) -> None:
        """Cancel the jobs still there (a slurmstepd outlives its slurmd), then stop every daemon by the pid
        in its pid file: slurmds, then slurmctld, then munged."""
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self._cancel_jobs()
        for pid_file in reversed(self.pid_files):
            with contextlib.suppress(FileNotFoundError, ValueError):
                _stop(int(pid_file.read_text().split()[0]))
        self.pid_files.clear()

    def _cancel_jobs(self) -> None:
        def jobs() -> list[str]:
            return self.run("squeue", "-h", "-o", "%i", check=False).stdout.split()

        if jobs():
            self.run("scancel", *jobs(), check=False)
            deadline = time.monotonic() + STOP_SECONDS + 5  # KillWait is 2 s
            while jobs() and time.monotonic() < deadline:
                time.sleep(0.1)


def _stop(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_SECONDS
        while time.monotonic() < deadline:
            os.kill(pid, 0)  # ProcessLookupError once it is gone
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)


def _conf(folder: Path, nodes: Sequence[str], partitions: Mapping[str, Sequence[str]], cpus: int, gpus: int) -> str:
    ctld_port, *node_ports = _free_ports(1 + len(nodes))
    host = socket.gethostname()
    lines = [
        f"ClusterName=ci{os.getpid()}",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={folder}/munge/munge.socket",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={folder}/state",
        f"SlurmdSpoolDir={folder}/spool/%n",
        f"SlurmctldPidFile={folder}/slurmctld.pid",
        f"SlurmdPidFile={folder}/slurmd-%n.pid",
        f"SlurmctldLogFile={folder}/log/slurmctld.log",
        f"SlurmdLogFile={folder}/log/slurmd-%n.log",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "MpiDefault=none",
        "ReturnToService=2",
        "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0",
        "SlurmdParameters=config_overrides",
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={folder}/jobcomp.txt",
        "GresTypes=gpu",
        "KillWait=2",
        "MessageTimeout=20",
        *(
            f"NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} CPUs={cpus} Gres=gpu:{gpus} "
            "State=UNKNOWN"
            for node, port in zip(nodes, node_ports, strict=True)
        ),
        *(
            f"PartitionName={name} Nodes={','.join(members)} Default={'YES' if index == 0 else 'NO'} LLN=YES "
            "MaxTime=INFINITE State=UP"
            for index, (name, members) in enumerate(partitions.items())
        ),
    ]
    return "\n".join(lines) + "\n"


def start_cluster(
    folder: Path, *, partitions: Mapping[str, Sequence[str]], cpus: int = 4, gpus: int = 4
) -> FakeCluster:
    """Start a cluster of the nodes `partitions` name (the first partition is the default) in `folder`,
    a fresh folder every user can enter (munge runs as its own user)."""
    nodes = tuple(dict.fromkeys(node for members in partitions.values() for node in members))
    for sub in ("state", "log", "dev", *(f"spool/{node}" for node in nodes)):
        (folder / sub).mkdir(parents=True)
    for index in range(gpus):
        os.mknod(folder / "dev" / f"gpu{index}", 0o666 | 0o020000, os.makedev(1, 3))  # a /dev/null: a fake GPU
    munge = folder / "munge"
    munge.mkdir(mode=0o755)
    (munge / "munge.key").write_bytes(os.urandom(1024))
    (munge / "munge.key").chmod(0o400)
    subprocess.run(["chown", "-R", "munge:munge", str(munge)], check=True, timeout=30)
    conf = folder / "slurm.conf"
    conf.write_text(_conf(folder, nodes, partitions, cpus, gpus))
    gpu_files = f"{folder}/dev/gpu[0-{gpus - 1}]" if gpus > 1 else f"{folder}/dev/gpu0"
    (folder / "gres.conf").write_text(f"NodeName={','.join(nodes)} Name=gpu File={gpu_files}\n")
    cluster = FakeCluster(folder, conf, nodes)
    try:
        _start_daemons(cluster, munge)
        _wait_until_ready(cluster, partitions)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _start_daemons(cluster: FakeCluster, munge: Path) -> None:
    socket_path = munge / "munge.socket"
    subprocess.run(
        [
            "munged", f"--socket={socket_path}", f"--key-file={munge}/munge.key",
            f"--pid-file={munge}/munged.pid", f"--log-file={munge}/munged.log", f"--seed-file={munge}/munged.seed",
        ],
        check=True, capture_output=True, timeout=30, user="munge", group="munge", extra_groups=[],
    )  # fmt: skip
    cluster.pid_files.append(munge / "munged.pid")
    _until(lambda: subprocess.run(["munge", "-n", f"--socket={socket_path}"], capture_output=True).returncode == 0)
    env = cluster.env
    subprocess.run(["slurmctld", "-f", str(cluster.conf)], env=env, check=True, capture_output=True, timeout=30)
    cluster.pid_files.append(cluster.folder / "slurmctld.pid")
    for node in cluster.nodes:
        slurmd = ["slurmd", "-f", str(cluster.conf), "-N", node]
        subprocess.run(slurmd, env=env, check=True, capture_output=True, timeout=30)
        cluster.pid_files.append(cluster.folder / f"slurmd-{node}.pid")


def _wait_until_ready(cluster: FakeCluster, partitions: Mapping[str, Sequence[str]]) -> None:
    def idle() -> bool:
        result = cluster.run("sinfo", "-h", "-N", "-o", "%N %t", check=False)
        states = dict(line.split() for line in result.stdout.splitlines() if line.strip())
        return result.returncode == 0 and all(states.get(node) == "idle" for node in cluster.nodes)

    _until(idle)
    for name, members in partitions.items():
        srun = ["srun", f"--partition={name}", f"--nodes={len(members)}", "true"]
        _until(lambda srun=srun: cluster.run(*srun, check=False).returncode == 0)


def _until(ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the fake Slurm cluster did not get ready within {READY_SECONDS:.0f} s")
        time.sleep(0.05)
