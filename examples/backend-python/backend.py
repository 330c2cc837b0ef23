#!/usr/bin/env python3
"""docs/backend.md's "Write desires from a backend" in Python (boto3).

Writes one ApplyDesire (a ConfigMap), waits until the applier's status answers it, then
removes the object with a DeleteDesire, and removes both specs.

Configuration: boto3's usual chain (AWS_REGION / AWS_DEFAULT_REGION, credentials), plus
AWS_ENDPOINT_URL_DYNAMODB, else AWS_ENDPOINT_URL (DynamoDB Local, as `make env` exports both;
read here, since boto3 < 1.28 reads no endpoint variable),
MANAGEMENT_CLUSTER (default mc01), TABLE_PREFIX (default ""), NAMESPACE (default "default")
and TASK_KEY (default "hc-demo").
"""
import json
import os
import time
import uuid
from datetime import datetime, timezone

import boto3

DESIRE_ID_NAMESPACE = uuid.UUID("6f1f3c63-5a0d-4c1e-9a55-2f1a8b8d0c3e")
CLUSTER = os.environ.get("MANAGEMENT_CLUSTER", "mc01")
PREFIX = os.environ.get("TABLE_PREFIX", "")
NAMESPACE = os.environ.get("NAMESPACE", "default")
TASK_KEY = os.environ.get("TASK_KEY", "hc-demo")

ENDPOINT = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB") or os.environ.get("AWS_ENDPOINT_URL")
db = boto3.client("dynamodb", endpoint_url=ENDPOINT,
                  region_name=os.environ.get("AWS_REGION", os.environ.get("AWS_DEFAULT_REGION")))


def table(kind, side):  # side: "specs" or "status"; kind: "applydesires", ...
    return f"{PREFIX}mc-{CLUSTER}-{side}-{kind}"


def desire_id(task_key, group, version, resource, namespace, name):
    return str(uuid.uuid5(DESIRE_ID_NAMESPACE, f"{task_key}/{group}/{version}/{resource}/{namespace}/{name}"))


def now():  # RFC 3339 in UTC; the applier echoes this very string in the status
    return datetime.now(timezone.utc).isoformat()


def create(kind, doc_id, spec, extra=None):
    t = now()
    item = {"documentID": {"S": doc_id}, "version": {"N": "1"},
            "createTime": {"S": t}, "updateTime": {"S": t}, "spec": {"M": spec}, **(extra or {})}
    db.put_item(TableName=table(kind, "specs"), Item=item,
                ConditionExpression="attribute_not_exists(documentID)")
    print(f"{kind} spec item: {json.dumps(item)}")  # DynamoDB JSON, as the AWS CLI shows it
    return item


def answers(spec, status):
    """A status answers the spec as it is now: same version, same time strings."""
    st = status.get("status", {}).get("M", {})
    conds = [c["M"] for c in st.get("conditions", {}).get("L", [])]
    return (conds and max(int(c["observedGeneration"]["N"]) for c in conds) == int(spec["version"]["N"])
            and st.get("observedDesireUpdateTime", {}).get("S") == spec["updateTime"]["S"]
            and st.get("observedDesireCreateTime", {}).get("S") == spec["createTime"]["S"])


def wait_for_status(kind, spec, timeout=120):
    deadline, pause = time.time() + timeout, 0.1
    while time.time() < deadline:
        got = db.get_item(TableName=table(kind, "status"), Key={"documentID": spec["documentID"]},
                          ConsistentRead=True).get("Item")
        if got and answers(spec, got):
            return got
        time.sleep(pause)
        pause = min(pause * 2, 2)
    raise TimeoutError(f"no status answers {spec['documentID']['S']} version {spec['version']['N']}")


def successful(status):
    for c in status["status"]["M"]["conditions"]["L"]:
        if c["M"]["type"]["S"] == "Successful":
            return c["M"]["status"]["S"], c["M"]["reason"]["S"], c["M"]["message"]["S"]


target = {"group": "", "version": "v1", "resource": "configmaps", "namespace": NAMESPACE, "name": "backend-python"}
common = {"managementCluster": {"S": CLUSTER}, "clusterID": {"S": TASK_KEY}}

# 1. Apply a ConfigMap.
content = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": target["name"], "namespace": NAMESPACE},
           "data": {"from": "python"}}
apply_id = desire_id(TASK_KEY, **target)
spec = create("applydesires", apply_id, common,
              {"spec_kubeContent": {"S": json.dumps(content, separators=(",", ":"))}})
# 2. Wait until its status answers it.
status, reason, message = successful(wait_for_status("applydesires", spec))
print(f"ApplyDesire {apply_id} version 1: Successful={status} {reason} ({message})")
assert status == "True", message

# 3. Drop the ApplyDesire, then delete the object with a DeleteDesire: the same ID (one rule for
# every kind, as desirectl's), in the DeleteDesire tables.
db.delete_item(TableName=table("applydesires", "specs"), Key={"documentID": {"S": apply_id}})
delete_id = desire_id(TASK_KEY, **target)
targetItem = {"targetItem": {"M": {k: {"S": v} for k, v in target.items()}}}
spec = create("deletedesires", delete_id, {**common, **targetItem})
status, reason, message = successful(wait_for_status("deletedesires", spec))
print(f"DeleteDesire {delete_id} version 1: Successful={status} {reason} ({message})")
assert status == "True", message
db.delete_item(TableName=table("deletedesires", "specs"), Key={"documentID": {"S": delete_id}})
