"""Thin AWS entry points: one module per Lambda handler (and container entry), named in
:mod:`sleeper.core.operations`. Each parses its event, delegates to a feature entry point over the instance from
:mod:`sleeper.runtime.aws.instance`, and maps failures to SQS partial batch responses."""
