"""The review loop's Django Tasks: e-mails and webhook deliveries, on the workers."""

from __future__ import annotations

from django.tasks import task


@task()
def send_notification_email(notification_id: int) -> None:
    from reviews import mail

    mail.send(notification_id)


@task()
def deliver_webhook(delivery_id: int) -> None:
    """One attempt; a failed one is enqueued again for when its backoff has passed."""
    from reviews import webhooks
    from reviews.models import DeliveryStatus

    delivery = webhooks.attempt(delivery_id)
    if delivery.status == DeliveryStatus.PENDING and delivery.next_attempt_at is not None:
        deliver_webhook.using(run_after=delivery.next_attempt_at).enqueue(delivery_id)
