"""On PostgreSQL, refuse UPDATE, DELETE and TRUNCATE of audit events in the database itself.

The model layer already refuses them; the trigger also stops raw SQL and other clients.
TRUNCATE is let through only when the transaction sets ``forge.audit_allow_truncate``,
which Forge's ``flush`` command does (audit/management/commands/flush.py). A database
owner can still drop the trigger; ``verify()`` then shows what changed.
"""

from django.db import migrations

CREATE = """
CREATE FUNCTION audit_auditevent_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE'
       AND coalesce(current_setting('forge.audit_allow_truncate', true), '') = 'on' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'audit events are append-only: % refused', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
CREATE TRIGGER audit_auditevent_append_only
    BEFORE UPDATE OR DELETE OR TRUNCATE ON audit_auditevent
    FOR EACH STATEMENT EXECUTE FUNCTION audit_auditevent_refuse_change();
"""

DROP = """
DROP TRIGGER IF EXISTS audit_auditevent_append_only ON audit_auditevent;
DROP FUNCTION IF EXISTS audit_auditevent_refuse_change();
"""


def create_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def drop_trigger(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [migrations.RunPython(create_trigger, drop_trigger, elidable=False)]
