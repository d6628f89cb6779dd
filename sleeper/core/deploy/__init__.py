"""Deploying an instance to AWS with the CDK: the context the app takes, the configuration it reads (instance and
tables, laid out as Sleeper lays them out) and the nested stacks it deploys. Standard library only, so the ``sleeper``
command prints what a deployment will create from the same code the CDK app builds it with."""
