"""On PostgreSQL, let only a superuser's flush truncate the audit table.

Migration 0002's trigger let TRUNCATE through whenever the transaction set
``forge.audit_allow_truncate``: a custom setting, which any session may set, so the
application's own connection (or an SQL injection through it) could empty the trail.
Now the setting counts only for a superuser, who can drop or bypass the trigger anyway
(``session_replication_role``), so the escape gives nobody a power they lacked; Forge's
``flush`` (a test database between tests) still sets it. UPDATE and DELETE stay refused
to everyone. docs/security.md says what remains: whoever owns the table may drop the
trigger, and the anchor log outside the database is what catches that.
"""

from django.db import migrations

SUPERUSER_ONLY = """
CREATE OR REPLACE FUNCTION audit_auditevent_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE'
       AND coalesce(current_setting('forge.audit_allow_truncate', true), '') = 'on'
       AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user AND rolsuper) THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'audit events are append-only: % refused', TG_OP
        USING ERRCODE = 'integrity_constraint_violation',
              HINT = 'only a superuser''s flush may empty the audit table';
END;
$$;
"""

ANY_SESSION = """
CREATE OR REPLACE FUNCTION audit_auditevent_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'TRUNCATE'
       AND coalesce(current_setting('forge.audit_allow_truncate', true), '') = 'on' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'audit events are append-only: % refused', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
"""


def superuser_only(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(SUPERUSER_ONLY, params=None)


def any_session(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(ANY_SESSION, params=None)


class Migration(migrations.Migration):
    dependencies = [("audit", "0005_walk_gate")]

    operations = [migrations.RunPython(superuser_only, any_session, elidable=False)]
