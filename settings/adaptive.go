package settings

// AdaptiveGrowthWindow turns on adaptive growth (pool/adaptive.go): a grow
// also covers as many pods as arrived in the last window. Seconds or a Go
// duration; 0 (the default) is off. About twice the timer interval suits.
const AdaptiveGrowthWindow = "ADAPTIVE_GROWTH_WINDOW"
