"""Notification e-mails through Django's e-mail backend (``EMAIL_BACKEND``; the console
backend unless configured): one short message per inbox item, with the comment and the
absolute link to the exact page."""

from __future__ import annotations

from django.conf import settings
from django.core.mail import send_mail

from reviews.links import absolute
from reviews.models import Notification


def send(notification_id: int) -> bool:
    """Send the e-mail of one inbox item; False when there is nobody to send it to."""
    item = Notification.objects.select_related("recipient").filter(pk=notification_id).first()
    if item is None or not item.recipient.email or not item.recipient.is_active:
        return False
    lines = [item.title, ""]
    if item.comment:
        lines += ["Comment:", item.comment, ""]
    lines += [f"Open it: {absolute(item.url)}", "", f"Your inbox: {absolute('/inbox/')}"]
    lines += ["", "Which news you get by e-mail: " + absolute("/inbox/settings/")]
    send_mail(
        subject=f"[Forge] {item.title}",
        message="\n".join(lines),
        from_email=settings.DEFAULT_FROM_EMAIL,
        recipient_list=[item.recipient.email],
    )
    return True
