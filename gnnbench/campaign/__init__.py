"""Campaigns that publish: a campaign file's runs, its committed rows and the tables it declares.

``declaration`` reads what a file declares, ``entries`` pools its rows into configurations, ``columns`` and
``render`` draw its tables (one renderer for every published table), ``figures`` its figures, ``publish`` runs
and renders it (``gnnbench campaign run|render NAME``), and ``manifest`` indexes what is published
(``results/README.md`` and README's figures table).
"""
from gnnbench.campaign.publish import campaign_names, render_campaign, run_campaign

__all__ = ["campaign_names", "render_campaign", "run_campaign"]
