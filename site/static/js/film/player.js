// placeholder until the film player lands
