/* The function the overhead compensation is calibrated on (entry layer),
 * instrumented and plain: see calib_target.c. */
#ifndef CG_CALIB_TARGET_H
#define CG_CALIB_TARGET_H

/* Never called by anything but calibrate.c. */
double cg_calib_hooked(double a, int i);
double cg_calib_plain(double a, int i);

#endif
