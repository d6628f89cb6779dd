"""The AWS runtime: the instance from its config bucket, its admin and the AWS wiring of operations."""
