"""The bulk import on EKS properties (Sleeper's ``EKSProperty``): every one Sleeper defines, with its default and
validation, and marked unused while this port does not deploy ``EksBulkImportStack``."""

from __future__ import annotations

import pytest

from sleeper.core.properties import INSTANCE_PROPERTY_INDEX, InstanceProperties
from sleeper.core.properties import instance_eks as eks

SLEEPER_DEFAULTS = {
    "sleeper.bulk.import.eks.cluster.admin.roles": None,
    "sleeper.bulk.import.eks.api.allowed.security.groups": None,
    "sleeper.bulk.import.eks.is.native.libs.image": "false",
    "sleeper.bulk.import.eks.awscli.layer.arn": None,
    "sleeper.bulk.import.eks.cluster.type": "FARGATE",
    "sleeper.bulk.import.eks.spark.executor.instances": "29",
    "sleeper.bulk.import.eks.spark.driver.memory": "16g",
    "sleeper.bulk.import.eks.spark.executor.memory": "16g",
    "sleeper.bulk.import.eks.spark.driver.memory.overhead": "1706m",
    "sleeper.bulk.import.eks.spark.executor.memory.overhead": "1706m",
    "sleeper.bulk.import.eks.spark.hadoop.fs.s3a.experimental.input.fadvise": "sequential",
    "sleeper.bulk.import.eks.spark.executor.cores": "5",
    "sleeper.bulk.import.eks.spark.driver.cores": "5",
    "sleeper.bulk.import.eks.spark.default.parallelism": "290",
    "sleeper.bulk.import.eks.spark.sql.shuffle.partitions": "290",
    "sleeper.bulk.import.eks.spark.dynamic.allocation.enabled": "false",
    "sleeper.bulk.import.eks.spark.executor.extra.java.options": eks._JAVA_OPTIONS,
    "sleeper.bulk.import.eks.spark.driver.extra.java.options": eks._JAVA_OPTIONS,
    "sleeper.bulk.import.eks.spark.executor.heartbeat.interval": "60s",
    "sleeper.bulk.import.eks.spark.network.timeout": "800s",
    "sleeper.bulk.import.eks.spark.memory.fraction": "0.80",
    "sleeper.bulk.import.eks.spark.memory.storage.fraction": "0.30",
    "sleeper.bulk.import.eks.spark.storage.level": "MEMORY_AND_DISK_SER",
    "sleeper.bulk.import.eks.spark.rdd.compress": "true",
    "sleeper.bulk.import.eks.spark.shuffle.compress": "true",
    "sleeper.bulk.import.eks.spark.shuffle.spill.compress": "true",
    "sleeper.bulk.import.eks.spark.executor.ephemeral.storage": "175Gi",
}


def should_define_every_eks_property_sleeper_defines_with_its_default() -> None:
    defined = {d.name: d.default for d in INSTANCE_PROPERTY_INDEX if d.name.startswith("sleeper.bulk.import.eks.")}
    user = {name: default for name, default in defined.items() if not INSTANCE_PROPERTY_INDEX.get(name).set_by_cdk}  # type: ignore[union-attr]
    assert user == SLEEPER_DEFAULTS


@pytest.mark.parametrize(
    ("value", "valid"), [("FARGATE", True), ("automode", True), ("AutoMode", True), ("ec2", False)]
)
def should_check_the_cluster_type_as_sleeper_does(value: str, valid: bool) -> None:
    problem = eks.BULK_IMPORT_EKS_CLUSTER_TYPE.problem(value)
    assert (problem is None) == valid


def should_say_which_settings_the_stack_refuses_and_what_automode_is() -> None:
    assert not any("Not used by this port" in d.description for d in eks.DEFINITIONS)
    assert "automode (EKS Auto Mode" in eks.BULK_IMPORT_EKS_CLUSTER_TYPE.description
    assert "true is refused" in eks.EKS_IS_NATIVE_LIBS_IMAGE.description


def should_load_a_java_configuration_setting_them() -> None:
    properties = InstanceProperties({"sleeper.bulk.import.eks.cluster.type": "AUTOMODE"})
    assert properties.get(eks.BULK_IMPORT_EKS_CLUSTER_TYPE) == "AUTOMODE"
    assert properties.get(eks.BULK_IMPORT_EKS_SPARK_EXECUTOR_EPHEMERAL_STORAGE) == "175Gi"
