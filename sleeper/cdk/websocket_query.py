"""The WebSocket query API (Sleeper's ``WebSocketQueryStack``): an API Gateway WebSocket API whose
``$connect`` route is IAM-authorised (SigV4) and whose ``$default`` route takes queries, both integrated with the
function running the registry's ``web_socket_query`` handler; the ``live`` stage, its URL recorded in
``sleeper.query.websocket.api.url``.

The handler plans a query and sends its sub-queries to the leaf partition query queue; the query functions then post
rows and status messages to the connection. Each of the three functions may post only to this API's connections
(``execute-api:ManageConnections`` on ``<api>/live/POST/@connections/*``), and the query policy may connect
(``execute-api:Invoke`` on ``<api>/live/$connect``). As in Sleeper, API Gateway authorises only ``$connect``: a message
can only be sent on a connection that was authorised.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from sleeper.cdk import grants, nag
from sleeper.cdk.common import SleeperCore, retention
from sleeper.cdk.query import QueryStack
from sleeper.core import naming, operations
from sleeper.core.properties import instance_cdk as cdkp

__all__ = ["CONNECT_ROUTE", "QUERY_ROUTE", "WebSocketQueryStack"]

CONNECT_ROUTE = "$connect"
QUERY_ROUTE = "$default"
"""The route queries arrive on: Sleeper's clients send the query JSON itself, with no ``action`` to select a route."""

APIG4_MESSAGES = (
    "API Gateway authorises a WebSocket API only on $connect (AWS_IAM, SigV4 here): messages on the $default route "
    "can only be sent over a connection that was authorised, as in Sleeper's WebSocketQueryStack."
)
IAM5_CONNECTIONS = (
    "Connection ids are made by API Gateway as clients connect: posting to the connections of this API's live stage "
    "is as narrow as execute-api:ManageConnections allows (POST only: no connection lookup or close)."
)
COG4_IAM = "The API uses IAM (SigV4) authorisation on $connect, not a Cognito user pool, as in Sleeper."


class WebSocketQueryStack(cdk.NestedStack):
    """``sleeper-<cid>-query-websocket-api`` with its ``live`` stage and the ``sleeper-<cid>-query-websocket-handler``
    function."""

    def __init__(self, scope: Construct, construct_id: str, core: SleeperCore, query: QueryStack) -> None:
        super().__init__(scope, construct_id, description="Sleeper WebSocket query API")
        ctx = core.ctx
        self.function = core.lambdas.function(
            self,
            "WebSocketApiHandler",
            handler=operations.WEB_SOCKET_QUERY,
            name_suffix=naming.WEBSOCKET_QUERY_FUNCTION,
            description=operations.handler(operations.WEB_SOCKET_QUERY).description,
        )
        core.grant_table_state_read(self.function)
        grants.table_read_write(self.function, query.tracker)
        grants.queue_send(self.function, query.leaf_queue.queue)

        self.api = apigw.CfnApi(
            self,
            "api",
            name=ctx.function_name(naming.WEBSOCKET_QUERY_API),
            description="Sleeper Query API",
            protocol_type="WEBSOCKET",
            route_selection_expression="$request.body.action",
        )
        integration = apigw.CfnIntegration(
            self,
            "integration",
            api_id=self.api.ref,
            integration_type="AWS_PROXY",
            integration_uri=(
                f"arn:{cdk.Aws.PARTITION}:apigateway:{cdk.Aws.REGION}:lambda:path/2015-03-31/functions/"
                f"{self.function.function_arn}/invocations"
            ),
        )
        self.connect_route = apigw.CfnRoute(
            self,
            "connect-route",
            api_id=self.api.ref,
            route_key=CONNECT_ROUTE,
            authorization_type="AWS_IAM",
            api_key_required=False,
            target=f"integrations/{integration.ref}",
        )
        self.query_route = apigw.CfnRoute(
            self,
            "default-route",
            api_id=self.api.ref,
            route_key=QUERY_ROUTE,
            authorization_type="NONE",
            api_key_required=False,
            target=f"integrations/{integration.ref}",
        )
        nag.acknowledge(self.query_route, "APIG4", APIG4_MESSAGES)
        nag.acknowledge(self.query_route, "COG4", COG4_IAM)
        nag.acknowledge(self.connect_route, "COG4", COG4_IAM)
        self.function.add_permission(
            "apigateway-access-to-lambda",
            principal=iam.ServicePrincipal("apigateway.amazonaws.com"),
            source_arn=self.api_arn("*/*"),
        )
        access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            log_group_name=f"/aws/apigateway/{ctx.function_name(naming.WEBSOCKET_QUERY_API)}",
            retention=retention(ctx),
            removal_policy=ctx.log_removal_policy,
        )
        self.stage = apigw.CfnStage(
            self,
            "stage",
            api_id=self.api.ref,
            stage_name=naming.WEBSOCKET_QUERY_STAGE,
            auto_deploy=True,
            access_log_settings=apigw.CfnStage.AccessLogSettingsProperty(
                destination_arn=access_logs.log_group_arn,
                format=(
                    '{"requestId":"$context.requestId","ip":"$context.identity.sourceIp",'
                    '"caller":"$context.identity.caller","user":"$context.identity.user",'
                    '"requestTime":"$context.requestTime","eventType":"$context.eventType",'
                    '"routeKey":"$context.routeKey","status":"$context.status",'
                    '"connectionId":"$context.connectionId"}'
                ),
            ),
        )
        self.url = (
            f"wss://{self.api.ref}.execute-api.{cdk.Aws.REGION}.{cdk.Aws.URL_SUFFIX}/{naming.WEBSOCKET_QUERY_STAGE}"
        )
        shown = grants.shown(self.api_arn(f"{naming.WEBSOCKET_QUERY_STAGE}/POST/@connections/*", ref="<api>"))
        nag.acknowledge(self, f"IAM5[Resource::{shown}]", IAM5_CONNECTIONS)
        self.grant_manage_connections(self.function)
        for construct_id, function in (
            ("QueryExecutorPostsToConnections", query.query_function),
            ("LeafPartitionQueryPostsToConnections", query.leaf_function),
        ):
            # A policy of this stack attached to the query stack's roles: a statement added to those roles' own
            # policies would make the query stack depend on this one, which depends on it
            role = function.role
            assert role is not None
            policy = iam.Policy(self, construct_id, roles=[role])
            self.grant_manage_connections(policy)
        core.set(cdkp.QUERY_WEBSOCKET_API_URL, self.url)
        cdk.CfnOutput(self, "WebSocketApiUrl", value=self.url)

    def api_arn(self, resource: str, *, ref: str | None = None) -> str:
        """The ``execute-api`` ARN of a resource of this API, ``arn:...:execute-api:<region>:<account>:<api>/<path>``
        (``ref`` in place of the API's id: how cdk-nag shows it in a finding)."""
        api = self.api.ref if ref is None else ref
        return f"arn:{cdk.Aws.PARTITION}:execute-api:{cdk.Aws.REGION}:{cdk.Aws.ACCOUNT_ID}:{api}/{resource}"

    def grant_manage_connections(self, grantee: iam.IGrantable | iam.Policy) -> None:
        """Lets a function (or the policy of one) post to this API's connections, and nothing else."""
        if isinstance(grantee, iam.Policy):
            grantee.add_statements(grants.statement(["execute-api:ManageConnections"], [self._connections_arn]))
            return
        grants.allow(
            grantee,
            ["execute-api:ManageConnections"],
            [self._connections_arn],
            reason=IAM5_CONNECTIONS,
        )

    @property
    def _connections_arn(self) -> str:
        return self.api_arn(f"{naming.WEBSOCKET_QUERY_STAGE}/POST/@connections/*")

    def grant_connect(self, grantee: iam.IGrantable) -> None:
        """Lets users of a policy connect to this API, and so send queries over their connections: ``$connect`` is the
        only route API Gateway authorises (Sleeper grants ``<api>/live/*``, which allows nothing more)."""
        grants.allow(grantee, ["execute-api:Invoke"], [self.api_arn(f"{naming.WEBSOCKET_QUERY_STAGE}/{CONNECT_ROUTE}")])
