"""Forms of the accounts pages."""

from __future__ import annotations

from django import forms


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="what the token is for, e.g. 'ci deploy'")
