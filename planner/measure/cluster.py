"""Measuring on every card type of a Ray cluster (SPEC §5.4): one GPU task per accelerator
type, each running the measurement harness on a node of that type, the curves returned
to the driver with the node's metadata and stored there.

Ray names a node's accelerator as a resource ``accelerator_type:<TYPE>`` (A100, L4,
H100, ...). Each task asks for one GPU and a sliver of its type's resource, so Ray puts it
on a node of that type, and never on a node without a GPU. Ray is imported only here
(``pip install -e '.[cluster]'``); the nodes need the planner and PyTorch installed.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from planner.curves.curve import Curve
from planner.errors import BadInput
from planner.measure.options import MeasureOptions, MeasureResult

RAY_CONNECT_S = 10.0
"""How long the planner waits for a Ray cluster's address to answer before saying so
(``ray.init`` itself retries an address that refuses for minutes)."""
_RAY_ADDRESS = re.compile(
    r"^(?P<scheme>ray://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)"
    r":(?P<port>[0-9]{1,5})$"
)

PREFIX = "accelerator_type:"
_SLIVER = 0.001  # of a type's resource: selects the node type without using it up


def accelerator_types(resources: Mapping[str, float]) -> list[str]:
    """The accelerator types a cluster's resources name, sorted."""
    return sorted(name[len(PREFIX) :] for name in resources if name.startswith(PREFIX))


def check_ray_address(address: str, *, wait_s: float = RAY_CONNECT_S) -> None:
    """BadInput unless ``address`` names a Ray cluster that answers: ``auto`` (the running
    one), ``HOST:PORT`` (its head node) or ``ray://HOST:PORT`` (Ray's client, which needs
    ``ray[client]``). The head is tried over TCP for at most ``wait_s`` seconds first, so
    an address nobody listens at is one line instead of ``ray.init``'s minutes of retries.
    """
    text = address.strip()
    if text == "auto":
        return
    found = _RAY_ADDRESS.match(text)
    port = int(found["port"]) if found else 0
    if found is None or not 1 <= port <= 65535:
        raise BadInput(
            f"--ray-address {text[:80]!r} is not a Ray address: give HOST:PORT of the head "
            "node (ray start --head prints it), ray://HOST:10001 for Ray's client, or auto"
        )
    if found["scheme"]:
        try:
            import grpc  # noqa: F401 - what Ray's client needs beyond Ray itself
        except ImportError:
            raise BadInput(
                f"--ray-address {text[:80]!r} uses Ray's client, which needs more than Ray: "
                "pip install 'ray[client]' (or give the head node's HOST:PORT)"
            ) from None
    host = found["host"].strip("[]")
    try:
        with socket.create_connection((host, port), timeout=wait_s):
            pass
    except OSError as exc:
        if isinstance(exc, TimeoutError):
            reason = f"no answer within {wait_s:g} s"
        else:
            reason = (exc.strerror or str(exc))[:80]
        raise BadInput(
            f"no Ray cluster answers at {text[:80]} ({reason}); start one (ray start --head) "
            "or check the address"
        ) from None


def _measure_here(options: MeasureOptions, accelerator: str) -> tuple[list[Curve], list[str], bool]:
    """The task: measure on this node and label each curve with where it was measured."""
    import ray

    from planner.measure.harness import measure_curves

    result = measure_curves(options)
    node = {
        "accelerator_type": accelerator,
        "hostname": socket.gethostname(),
        "ray_node_id": ray.get_runtime_context().get_node_id(),
        "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
    }
    curves = [
        replace(c, environment={**c.environment, "cluster_node": node}) for c in result.curves
    ]
    return curves, list(result.warnings), result.interrupted


def measure_on_cluster(
    options: MeasureOptions,
    *,
    address: str | None = None,
    accelerators: Sequence[str] | None = None,
    report: Callable[[str], None] = lambda _m: None,
) -> MeasureResult:
    """Measure ``options`` once per accelerator type of the cluster at ``address``
    (default: the running cluster, ``address="auto"``), or of the types named.

    BadInput when Ray is not installed, no cluster answers, it has no GPU node, or a type
    asked for is not in it. A type whose task fails is reported and the others go on.
    """
    try:
        import ray
    except ImportError:
        raise BadInput(
            "--cluster ray needs Ray: pip install -e '.[cluster]' on this machine and the nodes"
        ) from None
    started = False
    if not ray.is_initialized():
        if address:
            check_ray_address(address)
        try:
            ray.init(address=address or "auto", log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise BadInput(
                f"no Ray cluster answers at {address or 'auto'}: {str(exc)[:200]}; start one "
                "(ray start --head) or give --ray-address"
            ) from None
        started = True
    try:
        present = accelerator_types(ray.cluster_resources())
        if not present:
            raise BadInput(
                "the cluster declares no accelerator types (accelerator_type:* resources); "
                "its GPU nodes need them to be measured by type"
            )
        wanted = list(accelerators) if accelerators else present
        unknown = [t for t in wanted if t not in present]
        if unknown:
            raise BadInput(
                f"the cluster has no {', '.join(unknown)} nodes (it has {', '.join(present)})"
            )
        remote = ray.remote(_measure_here)
        tasks = {
            remote.options(num_gpus=1, resources={PREFIX + kind: _SLIVER}).remote(
                options, kind
            ): kind
            for kind in wanted
        }
        curves: list[Curve] = []
        warnings: list[str] = []
        interrupted = False
        pending = list(tasks)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            kind = tasks[ready[0]]
            try:
                measured, said, stopped = ray.get(ready[0])
            except Exception as exc:
                warnings.append(f"{kind}: the measurement failed: {str(exc)[:300]}")
                report(f"{kind}: failed")
                continue
            report(f"{kind}: {len(measured)} curve(s) measured")
            curves += measured
            warnings += [f"{kind}: {w}" for w in said]
            interrupted = interrupted or stopped
        return MeasureResult(tuple(curves), tuple(warnings), interrupted)
    finally:
        if started:
            ray.shutdown()
