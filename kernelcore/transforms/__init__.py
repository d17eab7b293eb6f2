"""Programs made from programs: append_backward (the gradient machinery whose rule table grad/ fills), prune and
the optimizers that append update ops."""
