"""Thin AWS entry points, named in :mod:`sleeper.core.operations`: the generic SQS handler (:mod:`sleeper.lambdas.sqs`,
``sleeper.lambdas.sqs:<entry name>``) and per-table trigger (:mod:`sleeper.lambdas.table_trigger`) serve every entry
they can from the registry, and one module per other handler. Each parses its event, delegates to a feature entry
point over the instance from :mod:`sleeper.runtime.aws.instance`, and maps failures to SQS partial batch responses."""
