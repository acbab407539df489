"""Serializer building blocks shared by every app's API."""

from __future__ import annotations

from collections.abc import Mapping

from django.db import models
from rest_framework import serializers

INT64_MAX = 2**63 - 1


class OffsetDateTimeField(serializers.DateTimeField):
    """ISO-8601 with an explicit offset (``+00:00``), never DRF's ``Z`` shorthand."""

    def to_representation(self, value):
        if not value:
            return None
        return self.enforce_timezone(value).isoformat()


class ApiModelSerializer(serializers.ModelSerializer):
    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.DateTimeField: OffsetDateTimeField,
    }


class StrictInputSerializer(serializers.Serializer):
    """Refuses keys it does not know, so a typo or a read-only field is a 400, not a silent no-op."""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            writable = {name for name, field in self.fields.items() if not field.read_only}
            unknown = sorted(str(key) for key in data if key not in writable)
            if unknown:
                raise serializers.ValidationError(
                    {key: ["Unknown field, or one that cannot be set here."] for key in unknown}
                )
        return super().to_internal_value(data)


# JSON has types; the API keeps them. DRF would turn 5 into "5", "1" into 1 and
# "yes" into True, accepting bodies the schema says are wrong.


class StrictCharField(serializers.CharField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        # The limit counts what was sent, as the schema's maxLength does, not what is left after trimming.
        if self.max_length is not None and len(data) > self.max_length:
            self.fail("max_length", max_length=self.max_length)
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data):
        # JSON Schema (and so the OpenAPI document) counts 7.0 as an integer; JSON parsers make it a float.
        if isinstance(data, float) and data.is_integer():
            data = int(data)
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictChoiceField(serializers.ChoiceField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid_choice", input=data)
        return super().to_internal_value(data)


def id_field(**kwargs) -> serializers.IntegerField:
    """A reference to a row by id. Out-of-range values are a 400, never a database overflow."""
    return StrictIntegerField(min_value=1, max_value=INT64_MAX, **kwargs)
