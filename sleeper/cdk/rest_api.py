"""The REST API (Sleeper's ``RestApiStack``): an API Gateway HTTP API named after its function, every route authorised
with IAM (SigV4), integrated with the function running the registry's ``rest_api`` handler; its endpoint recorded in
``sleeper.rest.api.url``.

Routes: ``POST /sleeper/tables`` (add a table, as Sleeper's), ``GET /sleeper/tables`` and
``GET /sleeper/tables/{name}`` (list the tables, a table's status; this port's). The function may read the instance
and its tables' state, write table properties (``tables/*`` in the config bucket, deleted again if indexing fails),
write the table index and initialise a new table's transaction logs; nothing else. Callers need
``execute-api:Invoke`` on the API (Sleeper grants it to no managed policy; attach your own).
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_logs as logs
from constructs import Construct

from sleeper.cdk import grants
from sleeper.cdk.common import SleeperCore, retention
from sleeper.core import naming, operations
from sleeper.core.properties import instance_cdk as cdkp

__all__ = ["ROUTES", "RestApiStack"]

ROUTES: tuple[tuple[str, apigw.HttpMethod], ...] = (
    (naming.REST_API_TABLES_PATH, apigw.HttpMethod.POST),
    (naming.REST_API_TABLES_PATH, apigw.HttpMethod.GET),
    (naming.REST_API_TABLES_PATH + "/{name}", apigw.HttpMethod.GET),
)
"""The API's routes: the paths the handler serves (``sleeper.rest_api.handler``)."""


class RestApiStack(cdk.NestedStack):
    """The HTTP API ``sleeper-<cid>-rest-api-handler`` and its function of the same name."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore) -> None:
        super().__init__(scope, construct_id, description="Sleeper REST API")
        ctx = core.ctx
        spec = operations.handler(operations.REST_API)
        self.function = core.lambdas.function(
            self,
            "RestApiHandlerlambda",
            handler=operations.REST_API,
            name_suffix=naming.REST_API_FUNCTION,
            description=spec.description,
        )
        core.grant_table_state_commit(self.function)
        grants.bucket_read_write(self.function, core.config, ["tables/*"])
        grants.bucket_delete(self.function, core.config, ["tables/*"])
        grants.table_read_write(self.function, *core.table_index_tables)

        access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            log_group_name=f"/aws/apigateway/{ctx.function_name(naming.REST_API_FUNCTION)}",
            retention=retention(ctx),
            removal_policy=ctx.log_removal_policy,
        )
        self.api = apigw.HttpApi(
            self,
            "RestApi",
            api_name=ctx.function_name(naming.REST_API_FUNCTION),
            description="Sleeper REST API",
            default_authorizer=authorizers.HttpIamAuthorizer(),
        )
        stage = self.api.default_stage
        assert stage is not None
        cfn_stage = stage.node.default_child
        assert isinstance(cfn_stage, apigw.CfnStage)
        cfn_stage.access_log_settings = apigw.CfnStage.AccessLogSettingsProperty(
            destination_arn=access_logs.log_group_arn,
            format=(
                '{"requestId":"$context.requestId","ip":"$context.identity.sourceIp",'
                '"caller":"$context.identity.caller","user":"$context.identity.user",'
                '"requestTime":"$context.requestTime","routeKey":"$context.routeKey","status":"$context.status"}'
            ),
        )
        integration = integrations.HttpLambdaIntegration(ctx.instance_id, self.function)
        for path, method in ROUTES:
            self.api.add_routes(path=path, methods=[method], integration=integration)
        self.url = self.api.api_endpoint
        core.set(cdkp.REST_API_URL, self.url)
        cdk.CfnOutput(self, "RestApiUrl", value=self.url)
