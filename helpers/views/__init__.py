"""Tables and static figures the notebooks show, grouped by notebook and section: presentation only.

The notebooks write the ideas by hand (samplers, decoders, measurements); what is left to these
modules is the printing and plotting around them, so that a notebook's cells stay short. Every
function takes the numbers it shows as arguments or computes them with the helpers the notebook
names, so nothing here can drift from what the notebook teaches."""
