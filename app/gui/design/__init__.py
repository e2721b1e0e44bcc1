"""The app's design system: tokens (colours, spacing, type), the stylesheet built from them,
and the widgets every page shares (banners, badges, empty states)."""
