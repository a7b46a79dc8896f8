
BlinearJ(k@tèÑ?Ë|G@«zQÀÈ#X@6K¿¤	ÀÀ‰yÀüCS@Ù?