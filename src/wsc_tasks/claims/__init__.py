"""What the software says about a model: the decision rule, the findings' sentences written from
it, the findings over all models, and the simulation that measures the rule's error rates."""
