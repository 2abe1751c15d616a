#!/usr/bin/python3
"""The deployment files users copy, checked against what runs them.

- Kubernetes TFJob (deploy/kubernetes/tfjob.yaml): for every replica, the TF_CONFIG that
  Kubeflow's training operator writes (cluster: every replica type, each replica at
  <job>-<type>-<index>.<namespace>.svc:<tfjob-port>; task: its type and index;
  environment "cloud"), which `tfconfig validate` must accept with the expected rank,
  chief and evaluator; the fields the operator and Ringwork rely on.
- Indexed Job (deploy/kubernetes/indexed-job.yaml): tf_config_from_index.sh run for every
  index with the manifest's environment gives a TF_CONFIG that validates, rank = index.
- Containerfile: every repository path it copies exists, and its runtime packages hold
  every shared library `train` links.

Usage: deploy_test.py TFCONFIG TRAIN   (Bazel passes the binaries)
"""
import json
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAILED: " + message, file=sys.stderr)


def validate(tfconfig, env, args=("validate",), program=None):
    """Runs `tfconfig validate` (or `program args`) with env; returns (code, output)."""
    run_env = dict(os.environ)
    run_env.update(env)
    proc = subprocess.run([program or tfconfig, *args], env=run_env, capture_output=True,
                          text=True, timeout=30)
    return proc.returncode, proc.stdout + proc.stderr


def this_task(output):
    """(task, rank or None) from the validate summary line."""
    m = re.search(r"this task: (\S+) \((?:rank (\d+)(?:, chief)?|evaluator, outside the ring)\)", output)
    if not m:
        return None, None
    return m.group(1), (int(m.group(2)) if m.group(2) else None)


def pvc_name():
    with open(os.path.join(ROOT, "deploy/kubernetes/pvc.yaml")) as f:
        return yaml.safe_load(f)["metadata"]["name"]


def check_volume(where, pod_spec, container):
    """The checkpoint volume is pvc.yaml's claim, mounted at /ckpt."""
    mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}
    claims = {v["name"]: v.get("persistentVolumeClaim", {}).get("claimName")
              for v in pod_spec.get("volumes", [])}
    ckpt = [name for name, path in mounts.items() if path == "/ckpt"]
    check(len(ckpt) == 1 and claims.get(ckpt[0]) == pvc_name(),
          f"{where}: /ckpt is not the volume claim {pvc_name()} of pvc.yaml")
    security = pod_spec.get("securityContext", {})
    check(security.get("runAsUser") == 10001 and security.get("fsGroup") == 10001,
          f"{where}: not run as the image's user 10001 with fsGroup 10001 (the volume)")


def check_tfjob(tfconfig):
    with open(os.path.join(ROOT, "deploy/kubernetes/tfjob.yaml")) as f:
        job = yaml.safe_load(f)
    name, namespace = job["metadata"]["name"], job["metadata"].get("namespace", "default")
    specs = job["spec"]["tfReplicaSpecs"]
    cluster = {}
    for rtype, spec in specs.items():
        container = spec["template"]["spec"]["containers"][0]
        check(container["name"] == "tensorflow",
              f"{rtype}: the operator writes TF_CONFIG only into a container named tensorflow")
        ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
        check("tfjob-port" in ports, f"{rtype}: no port named tfjob-port")
        port = ports.get("tfjob-port", 2222)
        check(spec.get("restartPolicy") == "OnFailure", f"{rtype}: restartPolicy is not OnFailure")
        env = {e["name"]: e for e in container.get("env", [])}
        token = env.get("RINGWORK_CLUSTER_TOKEN", {})
        check("secretKeyRef" in token.get("valueFrom", {}),
              f"{rtype}: RINGWORK_CLUSTER_TOKEN does not come from a Secret")
        check_volume(f"TFJob {rtype}", spec["template"]["spec"], container)
        check("requests" in container.get("resources", {}), f"{rtype}: no resource requests")
        args = " ".join(container.get("args", []))
        check("--checkpoint_dir=/ckpt" in args and "--backup_dir=/ckpt" in args,
              f"{rtype}: checkpoints and backups are not on the volume")
        cluster[rtype.lower()] = [f"{name}-{rtype.lower()}-{i}.{namespace}.svc:{port}"
                                  for i in range(spec["replicas"])]
    chiefs = len(cluster.get("chief", []))
    for rtype, hosts in cluster.items():
        for index in range(len(hosts)):
            tf_config = {"cluster": cluster, "task": {"type": rtype, "index": index},
                         "environment": "cloud"}
            code, output = validate(tfconfig, {"TF_CONFIG": json.dumps(tf_config)})
            check(code == 0, f"TFJob {rtype}:{index}: TF_CONFIG refused:\n{output}")
            task, rank = this_task(output)
            check(task == f"{rtype}:{index}", f"TFJob {rtype}:{index}: validate says {task}")
            expected = {"chief": index, "worker": chiefs + index}.get(rtype)
            check(rank == expected, f"TFJob {rtype}:{index}: rank {rank}, expected {expected}")
    print(f"TFJob: {sum(len(h) for h in cluster.values())} replicas' TF_CONFIG accepted")


def check_indexed_job(tfconfig):
    with open(os.path.join(ROOT, "deploy/kubernetes/indexed-job.yaml")) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    service = next(d for d in docs if d["kind"] == "Service")
    job = next(d for d in docs if d["kind"] == "Job")
    pod = job["spec"]["template"]["spec"]
    check(service["spec"].get("clusterIP") == "None", "the Service is not headless")
    check(pod.get("subdomain") == service["metadata"]["name"],
          "the pods' subdomain is not the headless Service's name")
    check(job["spec"].get("completionMode") == "Indexed", "the Job is not Indexed")
    container = pod["containers"][0]
    check_volume("Indexed Job", pod, container)
    check(service["spec"].get("selector", {}).get("job-name") == job["metadata"]["name"],
          "the Service does not select the Job's pods (job-name)")
    check(service["spec"].get("publishNotReadyAddresses") is True,
          "the Service hides pods that are not ready: peers cannot resolve a starting pod")
    env = {}
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = e["value"]
    env["RINGWORK_NAMESPACE"] = job["metadata"].get("namespace", "default")  # fieldRef
    completions = job["spec"]["completions"]
    check(int(env.get("RINGWORK_WORKERS", -1)) == completions,
          "RINGWORK_WORKERS differs from the Job's completions")
    check(env.get("RINGWORK_JOB_NAME") == job["metadata"]["name"],
          "RINGWORK_JOB_NAME differs from the Job's name (the pods' DNS names)")
    check(env.get("RINGWORK_SERVICE") == service["metadata"]["name"],
          "RINGWORK_SERVICE differs from the headless Service's name")
    ports = [p["containerPort"] for p in container.get("ports", [])]
    check(ports and str(ports[0]) == env.get("RINGWORK_PORT") and
          service["spec"]["ports"][0]["port"] == ports[0],
          "RINGWORK_PORT, the container port and the Service port differ")
    entry = os.path.join(ROOT, "deploy/kubernetes/tf_config_from_index.sh")
    with open(os.path.join(ROOT, "deploy/Containerfile")) as f:
        containerfile = f.read()
    command = [c for c in container["command"] if c.endswith("tf_config_from_index.sh")]
    check(len(command) == 1 and os.path.dirname(command[0]) + "/" in containerfile and
          "tf_config_from_index.sh" in containerfile,
          "the pod does not start through the tf_config_from_index.sh the image installs")
    for index in range(completions):
        run_env = dict(env, JOB_COMPLETION_INDEX=str(index), RINGWORK_TRAIN=tfconfig)
        code, output = validate(tfconfig, run_env, args=("validate",), program=entry)
        check(code == 0, f"Indexed Job pod {index}: TF_CONFIG refused:\n{output}")
        task, rank = this_task(output)
        check(task == f"worker:{index}" and rank == index,
              f"Indexed Job pod {index}: {task} rank {rank}")
        host = f"{env['RINGWORK_JOB_NAME']}-{index}.{service['metadata']['name']}."
        check(host in output, f"Indexed Job pod {index}: its own DNS name {host} is not listed")
    # Without the index (not run by an Indexed Job) it refuses with a message.
    code, output = validate(tfconfig, dict(env, RINGWORK_TRAIN=tfconfig), program=entry)
    check(code != 0 and "JOB_COMPLETION_INDEX" in output, "no index: not refused clearly")
    print(f"Indexed Job: {completions} pods' TF_CONFIG accepted")


def check_containerfile(binaries):
    with open(os.path.join(ROOT, "deploy/Containerfile")) as f:
        text = f.read()
    for path in re.findall(r"\b((?:tools|scripts|deploy|bazel-bin)/[\w./-]+)", text):
        if path.startswith("bazel-bin/"):
            target = path[len("bazel-bin/"):]
            package, name = os.path.dirname(target), os.path.basename(target)
            with open(os.path.join(ROOT, package, "BUILD")) as build:
                check(f'name = "{name}"' in build.read(), f"Containerfile: no target {package}:{name}")
        else:
            check(os.path.exists(os.path.join(ROOT, path)), f"Containerfile: {path} does not exist")
    for target in re.findall(r"//([\w/]+):(\w+)", text):
        with open(os.path.join(ROOT, target[0], "BUILD")) as build:
            check(f'name = "{target[1]}"' in build.read(), f"Containerfile: no target //{target[0]}:{target[1]}")
    # Every shared library the binaries link comes from a package the runtime stage installs.
    libraries = []
    for binary in binaries:
        linked = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
        check("not found" not in linked, f"ldd {binary}: a library is not found:\n{linked}")
        libraries += re.findall(r"=> (\S+)", linked)
    needed = set()
    for library in libraries:
        owner = subprocess.run(["dpkg", "-S", os.path.realpath(library)], capture_output=True,
                               text=True)
        if owner.returncode == 0:
            needed.add(owner.stdout.split(":")[0])
    runtime = text.split("FROM debian:12\n")[-1]
    check("USER 10001" in runtime, "Containerfile: the runtime stage does not run as user 10001")
    check('ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/train"]' in runtime,
          "Containerfile: the entry point is not tini running train")
    base = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g"}  # In debian:12 itself.
    for package in sorted(needed - base):
        check(re.search(rf"\b{re.escape(package)}\b", runtime) is not None,
              f"Containerfile: the runtime stage does not install {package}, which train links")
    print(f"Containerfile: paths exist; {len(needed)} library packages covered")


def main():
    tfconfig, train = (os.path.abspath(a) for a in sys.argv[1:3])
    check_tfjob(tfconfig)
    check_indexed_job(tfconfig)
    check_containerfile([train, tfconfig])
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        sys.exit(1)
    print("deploy_test: all checks passed")


if __name__ == "__main__":
    main()
