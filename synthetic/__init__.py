"""The embedded ENCODE-DREAM-format data set: genome, peaks, labels, proteins.

Entry point: :func:`synthetic.generate.generate_dataset`.
"""
