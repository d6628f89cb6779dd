"""The VPC that ECS tasks and Spark jobs run in: ``sleeper.vpc`` and ``sleeper.subnets`` if given, or a new one."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from sleeper.cdk.common import SleeperCore
from sleeper.core.properties import instance_common as common


class NetworkingStack(cdk.NestedStack):
    """A VPC with two availability zones, one NAT gateway, S3 and DynamoDB gateway endpoints and flow logs.

    Only created when ``sleeper.vpc`` is unset (an example or test deployment); production instances name an
    existing VPC, looked up at synth (see ``use_existing_vpc``).
    """

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper VPC")
        flow_logs = logs.LogGroup(
            self, "FlowLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=core.ctx.log_removal_policy
        )
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=2,
            nat_gateways=1,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24),
                ec2.SubnetConfiguration(name="private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=20),
            ],
            gateway_endpoints={
                "S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3),
                "DynamoDB": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.DYNAMODB),
            },
            flow_logs={
                "FlowLogs": ec2.FlowLogOptions(destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs))
            },
        )
        core.vpc = self.vpc
        core.subnets = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)


def use_existing_vpc(scope: Construct, core: SleeperCore) -> bool:
    """Looks up ``sleeper.vpc`` (and ``sleeper.subnets``) if set. Needs a stack with a concrete account and region.

    Returns:
        Whether a VPC was configured.
    """
    vpc_id = core.ctx.get(common.VPC_ID)
    if not vpc_id:
        return False
    core.vpc = ec2.Vpc.from_lookup(scope, "Vpc", vpc_id=vpc_id)
    subnet_ids = core.ctx.get_list(common.SUBNETS)
    if subnet_ids:
        core.subnets = ec2.SubnetSelection(
            subnets=[ec2.Subnet.from_subnet_id(scope, f"Subnet{i}", s) for i, s in enumerate(subnet_ids)]
        )
    else:
        core.subnets = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
    return True


def subnet_ids(core: SleeperCore) -> list[str]:
    """The ids of the subnets the instance's tasks and clusters run in: ``sleeper.subnets`` as given, or the private
    subnets of the instance VPC.

    Subnets given by id are used as they are: their availability zones are unknown at synthesis (an imported subnet
    has none), and a CDK subnet selection read back in Python asks for every subnet's zone.

    Raises:
        RuntimeError: If the instance has no VPC (no optional stack needing one is deployed).
    """
    if core.vpc is None:
        raise RuntimeError("the instance has no VPC: only stacks in NEEDS_VPC may ask for its subnets")
    selection = core.subnets or ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
    if selection.subnets:
        return [subnet.subnet_id for subnet in selection.subnets]
    return list(core.vpc.select_subnets(subnet_type=selection.subnet_type).subnet_ids)
