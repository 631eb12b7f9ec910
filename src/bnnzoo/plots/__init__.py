"""Figures in the style of van Meegen & Sompolinsky (2025): codes (Fig. 2), layers and kernels (Fig. 3), readout
posterior with theory (Fig. 4), code switching (Fig. 5), and trace plots of scalar order parameters; unit-layer,
kernel and theory figures of the other zoo entries; and :func:`write_report`, which diagnoses runs and writes their
reports as JSON and figures."""

from .figures import (plot_code_switching, plot_codes, plot_layers, plot_order_parameters, plot_readout,
                      save_figures)
from .report import write_report
from .units import plot_representations, plot_theory, plot_units

__all__ = ["plot_codes", "plot_layers", "plot_readout", "plot_code_switching", "plot_order_parameters",
           "save_figures", "write_report", "plot_units", "plot_representations", "plot_theory"]
